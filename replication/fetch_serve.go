package replication

// Fetch (key 1) as the replicas answer it, for consumers and followers alike: the
// session (KIP-227: fetch_session_context.go), one read of every partition
// (fetch_read.go), and the decision to answer at once or to park in the purgatory
// (ParkFetch, no goroutine of its own). A fetch answers at once when it has min_bytes,
// a partition to answer now (an error, a diverging epoch for a follower), a read
// falling behind the current segment (Kafka's DelayedFetch), or no wait.

import (
	"context"
	"time"

	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FetchSource is what a FetchServer asks of the broker: its local replicas, the one
// table from errors to Kafka codes, the replication quota's rate and the byte counters.
type FetchSource interface {
	// Replica returns topic-partition's local replica and whether its topic's
	// compression.type is zstd; without a local replica, nil and the partition's code.
	Replica(topic string, partition int32) (p *Partition, zstd bool, code int16)
	// ErrorCode is a read's error as a Kafka code (logged when unexpected).
	ErrorCode(err error) int16
	// LeaderThrottle is the rate (bytes/s) at which this leader throttles what it sends
	// replica of topic-partition (KIP-73), or -1 when it does not.
	LeaderThrottle(topic string, partition, replica int32, inSync bool) int64
	// Fetched counts an answer's record bytes: total, or -1 to add them up.
	Fetched(r *kmsg.FetchRequest, a *FetchAnswer, total int)
	// TopicName is the name of the topic with id (Fetch v13+), or the partition's
	// code: INCONSISTENT_TOPIC_ID when the image does not know the id but knows
	// known (the name a session resolved for it, or "") as another topic's, or when
	// the local replica of the partition belongs to another topic of the name;
	// UNKNOWN_TOPIC_ID when it does not know the id otherwise (fetch_topic_ids.go).
	TopicName(id [16]byte, known string, partition int32) (string, int16)
}

// FetchServer answers Fetch requests from the local replicas.
type FetchServer struct {
	Sessions  *FetchSessionCache
	Purgatory *Purgatory
	Source    FetchSource
	// Leader is the leader's replication quota (Throttles.Leader).
	Leader *Quota
	// ReadReplica, when set (replica.selector.class), chooses where a consumer's
	// fetch (v11+, with its client rack) of lp at fetchOffset should go instead
	// (KIP-392, read_replica.go): a broker id, or -1 to read here. Set before the
	// first fetch; called without locks held.
	ReadReplica func(topic string, partition int32, lp *Partition, clientRack string, fetchOffset int64) int32
	// Remote, when set (remote.log.storage.system.enable), serves consumers' fetches of
	// offsets in remote storage only (fetch_remote.go); nil: they answer
	// OFFSET_OUT_OF_RANGE. Set before the first fetch.
	Remote RemoteFetcher
}

// Serve answers req (a *kmsg.FetchRequest, authorized) with Fetch: at once, or
// deferred (rpc.Deferred) while it is parked.
//
// hints (nil: none) completes each answer before it is sent: the broker's KIP-951
// leader hints (v16+).
func (s *FetchServer) Serve(ctx context.Context, req *rpc.Request, denied func(topic string) bool, hints func(*kmsg.FetchResponse)) rpc.Result {
	var d *rpc.Deferred
	resp := s.fetch(ctx, req.Body.(*kmsg.FetchRequest), denied, func() func(kmsg.Response) {
		d = req.Defer()
		return func(resp kmsg.Response) { d.Complete(resp) }
	}, hints)
	if resp == nil {
		return rpc.RespondDeferred(d)
	}
	return rpc.Respond(resp)
}

// Fetch answers r: it returns the answer, or nil when r is parked in the purgatory
// until enough data arrives, a partition's state changes or max_wait_ms passes. park
// is called once, before r parks; the function it returns gets the answer (nil: the
// connection closed, the fetch is abandoned). The partitions of topics denied reports
// (nil: none) get TOPIC_AUTHORIZATION_FAILED.
func (s *FetchServer) Fetch(ctx context.Context, r *kmsg.FetchRequest, denied func(topic string) bool, park func() func(kmsg.Response)) kmsg.Response {
	return s.fetch(ctx, r, denied, park, nil)
}

func (s *FetchServer) fetch(ctx context.Context, r *kmsg.FetchRequest, denied func(topic string) bool, park func() func(kmsg.Response), hints func(*kmsg.FetchResponse)) kmsg.Response {
	if hints == nil {
		hints = func(*kmsg.FetchResponse) {}
	}
	fc := s.Sessions.NewContext(r, r.ReplicaID >= 0, time.Now().UnixMilli())
	if code := fc.ErrorCode(); code != 0 {
		resp := r.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = code
		return resp
	}
	if fc.watched() {
		return s.fetchWatched(ctx, r, &fc, denied, park, hints)
	}
	plan := fc.Request(r) // the session's partitions for an incremental fetch
	now := time.Now()
	resp, bytes, errored := s.read(plan, denied, fc.clock)
	if fc.clock != nil {
		fc.clock.Store(now.UnixNano()) // a follower's full fetch: its new session's clock
	}
	wait := time.Duration(r.MaxWaitMillis) * time.Millisecond
	if resp.remote != nil {
		// A partition to read from remote storage: answered when that read ends (Kafka's
		// DelayedRemoteFetch), whatever min_bytes says.
		complete := park()
		s.readRemoteThen(resp, func(resp *FetchAnswer) {
			s.Sessions.Finish(&fc, plan, resp, time.Now().UnixMilli())
			s.Source.Fetched(r, resp, -1)
			hints(resp.FetchResponse)
			complete(resp)
		})
		return nil
	}
	if errored || bytes >= int(r.MinBytes) || resp.behind || wait <= 0 {
		s.Sessions.Finish(&fc, plan, resp, time.Now().UnixMilli())
		s.Source.Fetched(r, resp, bytes)
		hints(resp.FetchResponse)
		return resp
	}
	// Parked in the purgatory, with no goroutine of its own: the append, high watermark
	// advance or role change of one of its partitions reads it again on the goroutine
	// that made it, and the answer goes to complete.
	complete := park()
	parts, gone := s.partitions(plan, denied)
	minBytes := max(int(r.MinBytes), 1)
	s.Purgatory.ParkFetch(ctx, parts, wait, resp, gone, DelayedFetch{
		Read: func() (FetchRead, bool) {
			a, n, errored := s.read(plan, denied, fc.clock)
			return a, errored || n >= minBytes || a.behind || a.remote != nil
		},
		Reusable: func(a FetchRead) bool { return a.(*FetchAnswer).reusable() },
		Answer: func(a FetchRead) {
			if a == nil { // the connection closed
				complete(nil)
				return
			}
			finish := func(resp *FetchAnswer) {
				s.Sessions.Finish(&fc, plan, resp, time.Now().UnixMilli())
				s.Source.Fetched(r, resp, -1)
				hints(resp.FetchResponse)
				complete(resp)
			}
			if resp := a.(*FetchAnswer); resp.remote != nil {
				s.readRemoteThen(resp, finish) // local retention moved past the fetch while it waited
			} else {
				finish(resp)
			}
		},
		Follower: r.ReplicaID >= 0,
		Stopping: func() FetchRead { return stoppingFollowerFetch(plan) },
		// A consumer's too: the broker stops, its leaderships have moved, and the
		// answer's hints (v16+) send the consumer to the new leaders at once.
		StoppingConsumer: func() FetchRead { return stoppingFollowerFetch(plan) },
	})
	return nil
}

// partitions returns the local replicas of r's partitions, those of topics denied
// reports excepted (answered TOPIC_AUTHORIZATION_FAILED: nothing to watch), and
// whether a partition has gone since the first read (read again, to answer its
// error).
func (s *FetchServer) partitions(r *kmsg.FetchRequest, denied func(topic string) bool) ([]*Partition, bool) {
	var parts []*Partition
	gone := false
	for ti := range r.Topics {
		t := &r.Topics[ti]
		for _, p := range t.Partitions {
			name, code := s.topicName(r, t, p.Partition)
			if code != 0 || denied != nil && denied(name) {
				continue // answered with its code: nothing to watch
			}
			if lp, _, _ := s.Source.Replica(name, p.Partition); lp != nil {
				parts = append(parts, lp)
			} else {
				gone = true
			}
		}
	}
	return parts, gone
}
