package broker

// The group coordinator's glue: one coordinator.Runtime for __consumer_offsets, whose
// shards are group.Shards. Effects become runtime Results (timers, records, Committed,
// replies); the reconciler loads and unloads partitions as this broker gains and loses
// their leadership; handlers (08, 09, 11-16, 42, 47) submit their call to the group's
// partition and answer through a RespondLater channel.

import (
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"github.com/petrel-broker/petrel/coordinator"
	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// expireOffsetsTimer is the runtime timer key of the periodic ExpireOffsets; group
// timer keys never start with "petrel/".
const expireOffsetsTimer = "petrel/expire-offsets"

// groupCoordinator runs the __consumer_offsets partitions this broker leads.
type groupCoordinator struct {
	*shardRouter[*group.Shard, group.Effects]
	cfg            group.Config
	expireInterval time.Duration
}

func newGroupCoordinator(b *Broker) *groupCoordinator {
	c := &b.cfg
	cfg := group.DefaultConfig()
	cfg.MinSessionTimeout = c.durationMs("group.min.session.timeout.ms")
	cfg.MaxSessionTimeout = c.durationMs("group.max.session.timeout.ms")
	cfg.InitialRebalanceDelay = c.durationMs("group.initial.rebalance.delay.ms")
	if n := c.int64Value("group.max.size"); n < 1<<31-1 {
		cfg.MaxSize = int(n)
	}
	cfg.OffsetsRetention = time.Duration(c.int64Value("offsets.retention.minutes")) * time.Minute
	cfg.OffsetMetadataMaxBytes = int(c.int64Value("offset.metadata.max.bytes"))
	cfg.NewMemberID = randomUUID
	gc := &groupCoordinator{cfg: cfg, expireInterval: c.durationMs("offsets.retention.check.interval.ms")}
	gc.shardRouter = &shardRouter[*group.Shard, group.Effects]{b: b, topic: offsetsTopic,
		rt: coordinator.New(coordinator.Config{
			Name:          offsetsTopic,
			WriteTimeout:  c.durationMs("offsets.commit.timeout.ms"),
			LoadReadBytes: int(c.int64Value("offsets.load.buffer.size")),
			Logger:        b.logger.Named("group-coordinator"),
		}),
		partitionOf: group.PartitionFor,
		newShard: func(int32, int32) coordinator.Shard {
			return &groupShard{gc: gc, s: group.NewShard(gc.cfg)}
		},
		unwrap: func(s coordinator.Shard) (*group.Shard, func(group.Effects) coordinator.Result) {
			gs := s.(*groupShard)
			return gs.s, gs.convert
		},
	}
	return gc
}

// gather runs one call per item (each on its group's shard) and answers with build once
// every item has its result.
func gather[T any](items int, run func(i int, done func(T)), build func(results []T) kmsg.Response) rpc.Result {
	ch := make(chan kmsg.Response, 1)
	if items == 0 {
		ch <- build(nil)
		return rpc.RespondLater(ch)
	}
	results := make([]T, items)
	var mu sync.Mutex
	remaining := items
	for i := range items {
		var once sync.Once
		run(i, func(v T) {
			once.Do(func() {
				mu.Lock()
				results[i] = v
				remaining--
				last := remaining == 0
				mu.Unlock()
				if last {
					ch <- build(results)
				}
			})
		})
	}
	return rpc.RespondLater(ch)
}

// groupShard adapts a group.Shard to the runtime.
type groupShard struct {
	gc *groupCoordinator
	s  *group.Shard
}

func (g *groupShard) Replay(key, value []byte) error { return g.s.Replay(key, value) }

// ReplayRecord and ReplayMarker make groupShard a coordinator.TransactionalShard:
// TxnOffsetCommit's transactional batches and the markers that end them.
func (g *groupShard) ReplayRecord(offset int64, batch coordinator.BatchInfo, key, value []byte) error {
	return g.s.ReplayRecord(offset, batch.ProducerID, batch.Transactional, key, value)
}

func (g *groupShard) ReplayMarker(m coordinator.Marker) error {
	g.s.ReplayMarker(m.ProducerID, m.Commit)
	return nil
}

func (g *groupShard) Loaded(now time.Time) coordinator.Result {
	res := g.convert(g.s.Loaded(now))
	if g.gc.expireInterval > 0 {
		res.Timers = append(res.Timers, g.expireTimer(now))
	}
	return res
}

func (g *groupShard) Unloaded(time.Time) coordinator.Result { return g.convert(g.s.Unload()) }

// expireTimer runs ExpireOffsets every offsets.retention.check.interval.ms.
func (g *groupShard) expireTimer(now time.Time) coordinator.Timer {
	return coordinator.Timer{Key: expireOffsetsTimer, At: now.Add(g.gc.expireInterval),
		Fire: func(now time.Time, s coordinator.Shard) coordinator.Result {
			gs := s.(*groupShard)
			res := gs.convert(gs.s.ExpireOffsets(now))
			res.Timers = append(res.Timers, gs.expireTimer(now))
			return res
		}}
}

// convert turns Effects into a runtime Result, as group.Effects documents: timers at
// once, records written, Committed with the outcome, then the replies.
func (g *groupShard) convert(eff group.Effects) coordinator.Result {
	var res coordinator.Result
	for _, t := range eff.Timers {
		key := t.Key
		res.Timers = append(res.Timers, coordinator.Timer{Key: key, At: t.At,
			Fire: func(now time.Time, s coordinator.Shard) coordinator.Result {
				gs := s.(*groupShard)
				return gs.convert(gs.s.Timeout(now, key))
			}})
	}
	for _, r := range eff.Records {
		res.Records = append(res.Records, coordinator.Record{Key: r.Key, Value: r.Value})
	}
	if p := eff.Producer; p != nil && len(res.Records) > 0 {
		res.Producer = &coordinator.Producer{ID: p.ID, Epoch: p.Epoch}
		if v, ok := p.Verification.(txnOffsetVerification); ok {
			res.Producer.Verify, res.Producer.Guard = v.verify, v.guard
		}
	}
	if eff.Committed == nil && len(eff.Replies) == 0 {
		return res
	}
	// The replies go once: after TimedOut when the write times out, else after
	// Committed (which, after a timeout, only applies what landed).
	answered := false
	reply := func() {
		if answered {
			return
		}
		answered = true
		for _, r := range eff.Replies {
			if r.Send != nil {
				r.Send(r.Response)
			}
		}
	}
	// then answers the write's fate: the shard's follow-up (Committed or TimedOut)
	// converted, after the replies are sent.
	then := func(follow func(int16) group.Effects) func(time.Time, int16) coordinator.Result {
		return func(_ time.Time, code int16) coordinator.Result {
			var next coordinator.Result
			if follow != nil {
				next = g.convert(follow(code))
			}
			reply()
			return next
		}
	}
	res.Committed = then(eff.Committed)
	if len(res.Records) > 0 {
		res.TimedOut = then(eff.TimedOut)
	}
	return res
}

// clientOf names the connection of req for DescribeGroups.
func clientOf(req *rpc.Request) group.Client {
	c := group.Client{}
	if req.ClientID != nil {
		c.ID = *req.ClientID
	}
	if req.Conn != nil && req.Conn.RemoteAddr != nil {
		host, _ := splitHostPort(req.Conn.RemoteAddr.String())
		c.Host = "/" + host
	}
	return c
}

// randomUUID is a random (version 4) UUID as Java's UUID.toString prints it: the unique
// part of the member ids the group coordinator generates, as Kafka's.
func randomUUID() string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
