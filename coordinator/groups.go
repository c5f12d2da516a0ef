package coordinator

// The group coordinator: a Runtime for __consumer_offsets whose shards are group.Shards.
// Effects become Results (timers, records, Committed, replies); the broker's reconciler
// loads and unloads partitions as the broker gains and loses their leadership; its
// handlers (08, 09, 11-16, 28, 42, 47) submit their call to the group's partition.

import (
	"crypto/rand"
	"fmt"
	"time"

	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/replication"
	"github.com/twmb/franz-go/pkg/kerr"
)

// expireOffsetsTimer is the runtime timer key of the periodic ExpireOffsets; group
// timer keys never start with "petrel/".
const expireOffsetsTimer = "petrel/expire-offsets"

// GroupConfig configures a GroupCoordinator.
type GroupConfig struct {
	// Runtime configures the runtime (Name is the topic, __consumer_offsets).
	Runtime Config
	// Group is the shards' configuration; a nil NewMemberID gets RandomUUID.
	Group group.Config
	// ExpireInterval is offsets.retention.check.interval.ms: how often ExpireOffsets
	// runs on each loaded partition; 0 never.
	ExpireInterval time.Duration
	// Partitions returns __consumer_offsets' partition count now (0: no topic yet).
	Partitions func() int32
	// DeleteShareGroupState, when set, deletes the share state partitions of a share
	// group DeleteGroups is about to delete (Kafka's DeleteShareGroupState, before the
	// group, as GroupCoordinatorService.deleteGroups): done(0) lets the deletion go on,
	// another code is the group's answer and the group stays. It is called on the
	// shard's goroutine, must not block, and may call done from any goroutine.
	DeleteShareGroupState func(groupID string, state []group.ShareTopicPartitions, done func(code int16))
}

// GroupCoordinator runs the __consumer_offsets partitions this broker leads.
type GroupCoordinator struct {
	*Router[*group.Shard, group.Effects]
	cfg              group.Config
	expireInterval   time.Duration
	deleteShareState func(groupID string, state []group.ShareTopicPartitions, done func(code int16))
}

// NewGroupCoordinator returns a coordinator with nothing loaded.
func NewGroupCoordinator(cfg GroupConfig) *GroupCoordinator {
	if cfg.Group.NewMemberID == nil {
		cfg.Group.NewMemberID = RandomUUID
	}
	if cfg.Group.Consumer.NewMemberID == nil {
		cfg.Group.Consumer.NewMemberID = RandomKafkaUUID
	}
	if cfg.Group.ConsumerTopics == nil { // an image with no topic
		cfg.Group.ConsumerTopics = func() group.ConsumerTopics { return group.ConsumerTopicMap{} }
	}
	gc := &GroupCoordinator{cfg: cfg.Group, expireInterval: cfg.ExpireInterval, deleteShareState: cfg.DeleteShareGroupState}
	gc.Router = &Router[*group.Shard, group.Effects]{
		rt:          New(cfg.Runtime),
		partitions:  cfg.Partitions,
		partitionOf: group.PartitionFor,
		newShard: func(int32, int32) Shard {
			return &groupShard{gc: gc, s: group.NewShard(gc.cfg)}
		},
		unwrap: func(s Shard) (*group.Shard, func(group.Effects) Result) {
			gs := s.(*groupShard)
			return gs.s, gs.convert
		},
	}
	return gc
}

// Verification is the KIP-890 outcome a TxnOffsetCommit's write carries through
// group.Producer.Verification to its append (Producer.Verify and Producer.Guard).
type Verification struct {
	Verify bool
	Guard  *replication.TxnVerification
}

// groupShard adapts a group.Shard to the runtime.
type groupShard struct {
	gc *GroupCoordinator
	s  *group.Shard
	// consumerArmed is when the consumer expiry timer fires (zero: not armed); only
	// the partition's executor touches it (consumer_heartbeat.go).
	consumerArmed time.Time
}

func (g *groupShard) Replay(key, value []byte) error { return g.s.Replay(key, value) }

// ReplayRecord and ReplayMarker make groupShard a TransactionalShard: TxnOffsetCommit's
// transactional batches and the markers that end them.
func (g *groupShard) ReplayRecord(offset int64, batch BatchInfo, key, value []byte) error {
	return g.s.ReplayRecord(offset, batch.ProducerID, batch.Transactional, key, value)
}

func (g *groupShard) ReplayMarker(m Marker) error {
	g.s.ReplayMarker(m.ProducerID, m.Commit)
	return nil
}

func (g *groupShard) Loaded(now time.Time) Result {
	res := g.convert(g.s.Loaded(now))
	res.Timers = append(res.Timers, g.rearmConsumerTimer())
	if g.gc.expireInterval > 0 {
		res.Timers = append(res.Timers, g.expireTimer(now))
	}
	return res
}

func (g *groupShard) Unloaded(time.Time) Result { return g.convert(g.s.Unload()) }

// expireTimer runs ExpireOffsets every offsets.retention.check.interval.ms.
func (g *groupShard) expireTimer(now time.Time) Timer {
	return periodic(expireOffsetsTimer, g.gc.expireInterval, now, func(now time.Time, s Shard) Result {
		gs := s.(*groupShard)
		return gs.convert(gs.s.ExpireOffsets(now))
	})
}

// convert turns Effects into a runtime Result, as group.Effects documents: timers at
// once, records written, Committed with the outcome, then the replies.
func (g *groupShard) convert(eff group.Effects) Result {
	var res Result
	for _, t := range eff.Timers {
		key := t.Key
		if key == consumerExpireTimer {
			if tm, ok := g.bringConsumerTimerForward(t.At); ok {
				res.Timers = append(res.Timers, tm)
			}
			continue
		}
		res.Timers = append(res.Timers, Timer{Key: key, At: t.At,
			Fire: func(now time.Time, s Shard) Result {
				gs := s.(*groupShard)
				return gs.convert(gs.s.Timeout(now, key))
			}})
	}
	for _, r := range eff.Records {
		res.Records = append(res.Records, Record{Key: r.Key, Value: r.Value})
	}
	if p := eff.Producer; p != nil && len(res.Records) > 0 {
		res.Producer = &Producer{ID: p.ID, Epoch: p.Epoch}
		if v, ok := p.Verification.(Verification); ok {
			res.Producer.Verify, res.Producer.Guard = v.Verify, v.Guard
		}
	}
	if eff.Committed == nil && len(eff.Replies) == 0 {
		return res
	}
	reply := onceReplies(func() {
		for _, r := range eff.Replies {
			if r.Send != nil {
				r.Send(r.Response)
			}
		}
	})
	res.Committed = then(eff.Committed, g.convert, reply)
	if len(res.Records) > 0 {
		res.TimedOut = then(eff.TimedOut, g.convert, reply)
	}
	return res
}

// onceReplies returns send wrapped to run once: the replies go after TimedOut when the
// write times out, else after Committed (which, after a timeout, only applies what
// landed).
func onceReplies(send func()) func() {
	answered := false
	return func() {
		if answered {
			return
		}
		answered = true
		send()
	}
}

// then answers a write's fate: the shard's follow-up (Committed or TimedOut) converted,
// after the replies are sent.
func then[E any](follow func(int16) E, convert func(E) Result, reply func()) func(time.Time, int16) Result {
	return func(_ time.Time, code int16) Result {
		var next Result
		if follow != nil {
			next = convert(follow(code))
		}
		reply()
		return next
	}
}

// periodic is a timer that runs run every interval while the partition is loaded.
func periodic(key string, interval time.Duration, now time.Time, run func(now time.Time, s Shard) Result) Timer {
	return Timer{Key: key, At: now.Add(interval), Fire: func(now time.Time, s Shard) Result {
		res := run(now, s)
		res.Timers = append(res.Timers, periodic(key, interval, now, run))
		return res
	}}
}

// RandomUUID is a random (version 4) UUID as Java's UUID.toString prints it: the unique
// part of the member ids the group coordinator generates, as Kafka's.
func RandomUUID() string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// CompleteTransaction writes m's marker on a __consumer_offsets partition (Kafka's
// GroupCoordinator.completeTransaction); the runtime replays it once committed,
// materialising or dropping the producer's pending offsets as a load would. The
// returned channel gets the outcome's code: the runtime's NOT_COORDINATOR,
// COORDINATOR_NOT_AVAILABLE and COORDINATOR_LOAD_IN_PROGRESS become
// NOT_LEADER_OR_FOLLOWER, as Kafka answers them to the transaction coordinator (which
// retries).
func (gc *GroupCoordinator) CompleteTransaction(partition int32, m MarkerWrite) <-chan int16 {
	ch := make(chan int16, 1)
	done := func(code int16) {
		switch code {
		case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code:
			code = kerr.NotLeaderForPartition.Code
		}
		select {
		case ch <- code:
		default:
		}
	}
	err := gc.rt.Submit(partition, func(time.Time, Shard) Result {
		answer := func(_ time.Time, code int16) Result {
			done(code)
			return Result{}
		}
		// A timed-out marker is answered at once (the transaction coordinator retries
		// it); the runtime still replays it if it lands.
		return Result{Marker: &m, Committed: answer, TimedOut: answer}
	}, func(err error) { done(ErrorCode(err)) })
	if err != nil {
		done(ErrorCode(err))
	}
	return ch
}
