package shareleader

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var earliest = GroupConfig{AutoOffsetReset: "earliest"}

// A first fetch loads the share partition (ReadShareGroupState with the leader
// epoch), makes the start offset durable, acquires the records and writes the
// acquisition (delivery count 1) before answering; an ACCEPT is answered only once
// its write has completed, and every write carries the leader epoch.
func TestAcquireThenAcknowledgeWritesBeforeAnswering(t *testing.T) {
	r := newRig(t, earliest)
	ctx := testCtx(t)
	r.replica.produce(5)
	v := r.fetch(ctx, "m1", 0)
	if v.code != 0 || !v.found || v.part.ErrorCode != 0 {
		t.Fatalf("fetch: %+v", v)
	}
	if got := v.acquired(); !slices.Equal(got, []string{"0-4@1"}) {
		t.Fatalf("acquired %v, want [0-4@1]", got)
	}
	if len(v.part.Records) != 61 {
		t.Fatalf("answered %d record bytes, want the one fetched batch (61)", len(v.part.Records))
	}
	calls := r.pers.callsSoFar()
	if len(calls) != 3 || calls[0].api != "read" || calls[1].api != "write" || calls[2].api != "write" {
		t.Fatalf("persister calls %+v, want read, write (start offset), write (acquired)", calls)
	}
	if c := calls[2].change; len(c.Batches) != 1 || c.Batches[0] != (share.StateBatch{FirstOffset: 0, LastOffset: 4, DeliveryState: share.Available, DeliveryCount: 1}) {
		t.Fatalf("acquisition written as %+v", c)
	}

	gate := make(chan struct{})
	r.pers.mu.Lock()
	r.pers.gate = gate
	before := r.pers.arrived
	r.pers.mu.Unlock()
	done := make(chan [2]int16, 1)
	go func() {
		top, code := r.acknowledge(ctx, "m1", 1, ack(0, 2, share.AckAccept))
		done <- [2]int16{top, code}
	}()
	testwait.Until(t, 10*time.Second, "the ACCEPT's write reaches the share coordinator", func() bool {
		r.pers.mu.Lock()
		defer r.pers.mu.Unlock()
		return r.pers.arrived > before
	})
	select {
	case got := <-done:
		t.Fatalf("the acknowledgement was answered %v before its write completed", got)
	default:
	}
	close(gate)
	select {
	case got := <-done:
		if got != [2]int16{0, 0} {
			t.Fatalf("acknowledgement answered %v", got)
		}
	case <-ctx.Done():
		t.Fatal("no answer")
	}
	calls = r.pers.callsSoFar()
	last := calls[len(calls)-1]
	if last.change.StartOffset != 3 || last.change.DeliveryCompleteCount != 0 {
		t.Fatalf("ACCEPT of 0-2 written as %+v, want the start offset moved to 3", last.change)
	}
	for _, c := range calls {
		if c.leaderEpoch != 7 {
			t.Fatalf("a %s carried leader epoch %d, want 7", c.api, c.leaderEpoch)
		}
	}
}

// A lock that expires makes its records Available again: another member acquires
// them with delivery count 2, and the first member's late ACCEPT is refused.
func TestLockExpiryRedeliversToAnotherMember(t *testing.T) {
	cfg := earliest
	cfg.Partition.RecordLockDurationMs = 100
	r := newRig(t, cfg)
	ctx := testCtx(t)
	r.replica.produce(3)
	if got := r.fetch(ctx, "m1", 0).acquired(); !slices.Equal(got, []string{"0-2@1"}) {
		t.Fatalf("m1 acquired %v", got)
	}
	if got := r.fetch(ctx, "m2", 0).acquired(); len(got) != 0 {
		t.Fatalf("m2 acquired %v while m1 holds the locks", got)
	}
	epoch := int32(1)
	testwait.Until(t, 10*time.Second, "m2 acquires the expired records", func() bool {
		v := r.fetch(ctx, "m2", epoch)
		epoch++
		if v.code != 0 {
			t.Fatalf("fetch: %v", kerr.ErrorForCode(v.code))
		}
		return slices.Equal(v.acquired(), []string{"0-2@2"})
	})
	if _, code := r.acknowledge(ctx, "m1", 1, ack(0, 2, share.AckAccept)); code != kerr.InvalidRecordState.Code {
		t.Fatalf("m1's ACCEPT after its lock expired: %v, want INVALID_RECORD_STATE", kerr.ErrorForCode(code))
	}
}

// When the connection that opened a member's share session closes, the session
// ends and every record the member held is Available again, for another member, with
// the delivery count taken back; a ShareAcknowledge with epoch -1 does the same.
func TestSessionClosedReleasesTheMembersRecords(t *testing.T) {
	r := newRig(t, earliest)
	ctx := testCtx(t)
	r.replica.produce(4)
	conn, closeConn := context.WithCancel(ctx)
	if got := r.fetch(conn, "m1", 0).acquired(); !slices.Equal(got, []string{"0-3@1"}) {
		t.Fatalf("m1 acquired %v", got)
	}
	closeConn()
	key := share.Key{GroupID: "g", TopicID: testTopic, Partition: 0}
	testwait.Until(t, 10*time.Second, "m1's records released", func() bool {
		inflight, _, _ := r.m.InFlight(key)
		return len(inflight) == 1 && inflight[0].State == share.Available && inflight[0].DeliveryCount == 0
	})
	if n := r.m.Sessions().Len(); n != 0 {
		t.Fatalf("%d share sessions after the connection closed", n)
	}
	if got := r.fetch(ctx, "m2", 0).acquired(); !slices.Equal(got, []string{"0-3@1"}) {
		t.Fatalf("m2 acquired %v, want the released records", got)
	}
	if top, code := r.acknowledge(ctx, "m2", -1, ack(0, 0, share.AckAccept)); top != 0 || code != 0 {
		t.Fatalf("closing acknowledgement: %d %d", top, code)
	}
	inflight, start, _ := r.m.InFlight(key)
	if start != 1 || len(inflight) != 1 || inflight[0].State != share.Available {
		t.Fatalf("after m2 closed its session: start %d, %+v", start, inflight)
	}
}

// A new leader (here the same broker in a new leader epoch) drops the share
// partition and reloads it from the persisted state: an ACCEPTed record is never
// delivered again, an acquired one comes back with its delivery count, and the writes
// carry the new leader epoch.
func TestReloadFromPersistedStateAfterLeaderChange(t *testing.T) {
	r := newRig(t, earliest)
	ctx := testCtx(t)
	r.replica.produce(5)
	r.fetch(ctx, "m1", 0)
	if top, code := r.acknowledge(ctx, "m1", 1, ack(0, 1, share.AckAccept)); top != 0 || code != 0 {
		t.Fatalf("ack: %d %d", top, code)
	}
	r.replica.mu.Lock()
	r.replica.leaderEpoch = 8
	r.replica.mu.Unlock()
	r.m.DropNotLed()
	if n := r.m.Loaded(); n != 0 {
		t.Fatalf("%d share partitions held after the leader epoch moved", n)
	}
	n := len(r.pers.callsSoFar())
	if got := r.fetch(ctx, "m2", 0).acquired(); !slices.Equal(got, []string{"2-4@2"}) {
		t.Fatalf("after reload m2 acquired %v, want [2-4@2]", got)
	}
	calls := r.pers.callsSoFar()[n:]
	if calls[0].api != "read" || calls[0].leaderEpoch != 8 {
		t.Fatalf("reload began with %+v, want a read in leader epoch 8", calls[0])
	}
	for _, c := range calls {
		if c.leaderEpoch != 8 {
			t.Fatalf("%s after the reload carried leader epoch %d", c.api, c.leaderEpoch)
		}
	}
}

// Share session epochs: a session must exist for an epoch above 0, the epoch must be
// the next one, ShareAcknowledge cannot open one, and group.share.max.share.sessions
// limits them.
func TestShareSessionErrors(t *testing.T) {
	r := newRig(t, earliest)
	r.m.sessions.max = 1
	ctx := testCtx(t)
	if v := r.fetch(ctx, "m1", 3); v.code != kerr.ShareSessionNotFound.Code {
		t.Fatalf("epoch 3 with no session: %v", kerr.ErrorForCode(v.code))
	}
	if v := r.fetch(ctx, "m1", 0); v.code != 0 {
		t.Fatalf("open: %v", kerr.ErrorForCode(v.code))
	}
	if v := r.fetch(ctx, "m1", 3); v.code != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("epoch 3, expected 1: %v", kerr.ErrorForCode(v.code))
	}
	if top, _ := r.acknowledge(ctx, "m1", 0); top != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("ShareAcknowledge with epoch 0: %v", kerr.ErrorForCode(top))
	}
	if v := r.fetch(ctx, "m2", 0); v.code != kerr.ShareSessionLimitReached.Code {
		t.Fatalf("a second session over the limit of 1: %v", kerr.ErrorForCode(v.code))
	}
	if v := r.fetch(ctx, "m1", 1); v.code != 0 {
		t.Fatalf("epoch 1: %v", kerr.ErrorForCode(v.code))
	}
	req := kmsg.NewPtrShareFetchRequest()
	req.Version, req.GroupID, req.MemberID, req.ShareSessionEpoch = 2, kmsg.StringPtr("g"), kmsg.StringPtr("m1"), -1
	req.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: testTopic, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}}}}
	if code := r.m.ShareFetch(ctx, req, RequestOptions{}).Response().ErrorCode; code != kerr.InvalidRequest.Code {
		t.Fatalf("a closing fetch naming a partition to fetch: %v, want INVALID_REQUEST", kerr.ErrorForCode(code))
	}
	req.Topics = nil
	if code := r.m.ShareFetch(ctx, req, RequestOptions{}).Response().ErrorCode; code != 0 || r.m.Sessions().Len() != 0 {
		t.Fatalf("closing fetch: %v, %d sessions left", kerr.ErrorForCode(code), r.m.Sessions().Len())
	}
}

// A fetch that finds nothing to acquire waits up to MaxWaitMillis and is answered as
// soon as records arrive.
func TestLongPollAnswersWhenRecordsArrive(t *testing.T) {
	r := newRig(t, earliest)
	ctx := testCtx(t)
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 2
	req.GroupID, req.MemberID = kmsg.StringPtr("g"), kmsg.StringPtr("m1")
	req.MaxWaitMillis, req.MaxRecords, req.MaxBytes = 20000, 100, 1<<20
	tp := kmsg.NewShareFetchRequestTopic()
	tp.TopicID = testTopic
	tp.Partitions = []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}}
	req.Topics = []kmsg.ShareFetchRequestTopic{tp}
	f := r.m.ShareFetch(ctx, req, RequestOptions{ConnCtx: ctx})
	if f.Wait <= 0 {
		t.Fatalf("an empty fetch with MaxWaitMillis did not wait")
	}
	answered := make(chan *kmsg.ShareFetchResponse, 1)
	start := time.Now()
	go func() { answered <- f.Await(ctx) }()
	r.replica.produce(2)
	select {
	case resp := <-answered:
		if got := viewOf(resp).acquired(); !slices.Equal(got, []string{"0-1@1"}) {
			t.Fatalf("long poll acquired %v", got)
		}
		if time.Since(start) > 15*time.Second {
			t.Fatalf("answered after %v, not when the records arrived", time.Since(start))
		}
	case <-ctx.Done():
		t.Fatal("the long poll was never answered")
	}
}

// A write the share coordinator refuses fails the acknowledgement with its code and
// drops the share partition, so that the next fetch reloads the durable state.
func TestFailedWriteDropsTheSharePartition(t *testing.T) {
	r := newRig(t, earliest)
	ctx := testCtx(t)
	r.replica.produce(2)
	r.fetch(ctx, "m1", 0)
	r.pers.mu.Lock()
	r.pers.fail = kerr.FencedStateEpoch.Code
	r.pers.mu.Unlock()
	if _, code := r.acknowledge(ctx, "m1", 1, ack(0, 1, share.AckAccept)); code != kerr.FencedStateEpoch.Code {
		t.Fatalf("acknowledgement: %v, want FENCED_STATE_EPOCH", kerr.ErrorForCode(code))
	}
	testwait.Until(t, 10*time.Second, "the share partition dropped", func() bool { return r.m.Loaded() == 0 })
}

// A partition this broker does not lead is answered NOT_LEADER_OR_FOLLOWER.
func TestFetchFromAFollowerIsNotLeader(t *testing.T) {
	r := newRig(t, earliest)
	ctx := testCtx(t)
	r.replica.mu.Lock()
	r.replica.role = replication.Follower
	r.replica.mu.Unlock()
	if v := r.fetch(ctx, "m1", 0); v.part.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("fetch from a follower: %v", kerr.ErrorForCode(v.part.ErrorCode))
	}
}

// The per group metrics: records acquired, redelivered after a lock expired, and
// archived when the lock of their last permitted delivery expired
// (group.share.delivery.count.limit 2); the archived records are never delivered
// again.
func TestMetricsCountRedeliveriesAndArchivedAtDeliveryLimit(t *testing.T) {
	cfg := earliest
	cfg.Partition.RecordLockDurationMs, cfg.Partition.DeliveryCountLimit = 50, 2
	r := newRig(t, cfg)
	ctx := testCtx(t)
	r.replica.produce(3)
	if got := r.fetch(ctx, "m1", 0).acquired(); !slices.Equal(got, []string{"0-2@1"}) {
		t.Fatalf("acquired %v", got)
	}
	epoch := int32(1)
	testwait.Until(t, 10*time.Second, "redelivered after the lock expired", func() bool {
		v := r.fetch(ctx, "m1", epoch)
		epoch++
		return slices.Equal(v.acquired(), []string{"0-2@2"})
	})
	key := share.Key{GroupID: "g", TopicID: testTopic, Partition: 0}
	testwait.Until(t, 10*time.Second, "archived at the delivery limit", func() bool {
		_, start, _ := r.m.InFlight(key)
		return start == 3
	})
	if got := r.fetch(ctx, "m1", epoch).acquired(); len(got) != 0 {
		t.Fatalf("archived records delivered again: %v", got)
	}
	s := r.m.Samples()
	if len(s) != 1 || s[0].GroupID != "g" || s[0].Acquired != 6 || s[0].Redelivered != 3 || s[0].ArchivedAtDeliveryLimit != 3 || s[0].InFlight != 0 {
		t.Fatalf("samples %+v", s)
	}
}

// Four members fetch and acknowledge (piggybacked ACCEPTs) concurrently: every record
// is acquired by exactly one member, once, and the start offset ends past them all.
func TestConcurrentMembersAcquireEachRecordOnce(t *testing.T) {
	r := newRig(t, earliest)
	ctx := testCtx(t)
	for range 20 {
		r.replica.produce(10)
	}
	var mu sync.Mutex
	seen := map[int64]string{}
	var wg sync.WaitGroup
	for i := range 4 {
		member := fmt.Sprintf("m%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var pending []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch
			for epoch := int32(0); ctx.Err() == nil; epoch++ {
				v := r.fetch(ctx, member, epoch, pending...)
				if v.code != 0 || v.part.ErrorCode != 0 || v.part.AcknowledgeErrorCode != 0 {
					t.Errorf("%s: %d %d %d", member, v.code, v.part.ErrorCode, v.part.AcknowledgeErrorCode)
					return
				}
				pending = nil
				mu.Lock()
				for _, a := range v.part.AcquiredRecords {
					for o := a.FirstOffset; o <= a.LastOffset; o++ {
						if prev, dup := seen[o]; dup {
							t.Errorf("offset %d acquired by %s and %s", o, prev, member)
						}
						seen[o] = member
					}
					pending = append(pending, ack(a.FirstOffset, a.LastOffset, share.AckAccept))
				}
				done := len(seen) == 200
				mu.Unlock()
				if done && len(pending) == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	if len(seen) != 200 {
		t.Fatalf("%d of 200 records acquired", len(seen))
	}
	_, start, _ := r.m.InFlight(share.Key{GroupID: "g", TopicID: testTopic, Partition: 0})
	if start != 200 {
		t.Fatalf("start offset %d after every record was accepted, want 200", start)
	}
}

// share.isolation.level read_committed: the records of an aborted transaction and
// the transaction markers are archived, never delivered; read_uncommitted delivers
// the aborted transaction's records (never the markers).
func TestReadCommittedSkipsAbortedTransactions(t *testing.T) {
	for _, tc := range []struct {
		readCommitted bool
		want          []string
	}{{true, []string{"3-4@1"}}, {false, []string{"0-1@1", "3-4@1"}}} {
		cfg := earliest
		cfg.ReadCommitted = tc.readCommitted
		r := newRig(t, cfg)
		r.replica.produceTxn(2, 5, 0x10) // transactional, aborted below
		r.replica.produceTxn(1, 5, 0x30) // its abort marker
		r.replica.produce(2)
		r.replica.aborted = []replication.AbortedTxn{{ProducerID: 5, FirstOffset: 0, LastOffset: 2}}
		if got := r.fetch(testCtx(t), "m1", 0).acquired(); !slices.Equal(got, tc.want) {
			t.Fatalf("read_committed %v acquired %v, want %v", tc.readCommitted, got, tc.want)
		}
	}
}

// Records removed by retention or DeleteRecords before any member got them move the
// share-partition start offset to the log start offset; the move is durable.
func TestLogStartOffsetMovesTheStartOffset(t *testing.T) {
	r := newRig(t, earliest)
	ctx := testCtx(t)
	r.fetch(ctx, "m1", 0) // loaded on the empty log, at 0
	r.replica.produce(3)
	r.replica.produce(2)
	r.replica.mu.Lock()
	r.replica.batches, r.replica.logStart = r.replica.batches[1:], 3
	r.replica.mu.Unlock()
	if got := r.fetch(ctx, "m1", 1).acquired(); !slices.Equal(got, []string{"3-4@1"}) {
		t.Fatalf("acquired %v, want [3-4@1]", got)
	}
	st, ok := r.pers.State(share.Key{GroupID: "g", TopicID: testTopic, Partition: 0})
	if !ok || st.StartOffset != 3 {
		t.Fatalf("durable state %+v, want start offset 3", st)
	}
}
