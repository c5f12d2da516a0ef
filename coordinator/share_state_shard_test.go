package coordinator

import (
	"reflect"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/share"
	"github.com/twmb/franz-go/pkg/kerr"
)

// shardLog drives a ShareStateShard as the runtime does: each write's records are
// kept as the log and committed (or failed) on demand.
type shardLog struct {
	t       *testing.T
	s       *ShareStateShard
	now     time.Time
	records []Record // committed, in log order
}

func newShardLog(t *testing.T, perSnapshot int) *shardLog {
	return &shardLog{t: t, s: newShareStateShard(perSnapshot, nil), now: time.UnixMilli(1_000)}
}

// run runs op and settles its write with code; it returns the op's answer.
func (l *shardLog) run(code int16, op func(done func(SharePartitionResult)) Result) SharePartitionResult {
	l.t.Helper()
	var got *SharePartitionResult
	res := op(func(r SharePartitionResult) {
		if got != nil {
			l.t.Fatal("answered twice")
		}
		got = &r
	})
	if len(res.Records) > 0 {
		if code == 0 {
			l.records = append(l.records, res.Records...)
		}
		res.Committed(l.now, code)
	}
	if got == nil {
		l.t.Fatal("not answered")
	}
	return *got
}

var shareKey = share.Key{GroupID: "g", TopicID: [16]byte{1, 2, 3}, Partition: 0}

func TestShareStateShard_InitializeReadWriteFence(t *testing.T) {
	l := newShardLog(t, 3)
	s := l.s
	// Never initialized: start offset -1, state epoch 0.
	r := l.run(0, func(d func(SharePartitionResult)) Result { return s.Read(l.now, shareKey, 0, d) })
	if r.ErrorCode != 0 || r.State.StartOffset != -1 || r.State.StateEpoch != 0 {
		t.Fatalf("uninitialized read %+v", r)
	}
	if r := l.run(0, func(d func(SharePartitionResult)) Result { return s.Initialize(l.now, shareKey, 1, 10, d) }); r.ErrorCode != 0 {
		t.Fatalf("initialize %+v", r)
	}
	// A read with leader epoch 5 records it; 4 is fenced from then on.
	r = l.run(0, func(d func(SharePartitionResult)) Result { return s.Read(l.now, shareKey, 5, d) })
	if r.ErrorCode != 0 || r.State.StartOffset != 10 || r.State.StateEpoch != 1 {
		t.Fatalf("read %+v", r)
	}
	batches := []share.StateBatch{{FirstOffset: 10, LastOffset: 14, DeliveryState: share.Acknowledged, DeliveryCount: 1}}
	write := func(leaderEpoch, stateEpoch int32, start int64, bs []share.StateBatch) SharePartitionResult {
		return l.run(0, func(d func(SharePartitionResult)) Result {
			return s.Write(l.now, shareKey, ShareWrite{StateEpoch: stateEpoch, LeaderEpoch: leaderEpoch,
				Change: share.Change{StartOffset: start, DeliveryCompleteCount: -1, Batches: bs}}, d)
		})
	}
	if r := write(4, 1, 10, batches); r.ErrorCode != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("write from leader epoch 4 after a read in 5: %+v", r)
	}
	if r := l.run(0, func(d func(SharePartitionResult)) Result { return s.Read(l.now, shareKey, 4, d) }); r.ErrorCode != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("read from leader epoch 4: %+v", r)
	}
	if r := write(5, 0, 10, batches); r.ErrorCode != kerr.FencedStateEpoch.Code {
		t.Fatalf("write of state epoch 0 over 1: %+v", r)
	}
	if r := l.run(0, func(d func(SharePartitionResult)) Result { return s.Initialize(l.now, shareKey, 0, 0, d) }); r.ErrorCode != kerr.FencedStateEpoch.Code {
		t.Fatalf("initialize with an older state epoch: %+v", r)
	}
	// Enough writes to cross a snapshot (3 updates per snapshot).
	for i := range 5 {
		off := int64(15 + i)
		if r := write(5, 1, 10, []share.StateBatch{{FirstOffset: off, LastOffset: off, DeliveryState: share.Archived, DeliveryCount: 5}}); r.ErrorCode != 0 {
			t.Fatalf("write %d: %+v", i, r)
		}
	}
	if r := write(6, 1, 15, batches); r.ErrorCode != 0 {
		t.Fatalf("write moving the start offset: %+v", r)
	}
	r = l.run(0, func(d func(SharePartitionResult)) Result { return s.Read(l.now, shareKey, 6, d) })
	want := []share.StateBatch{{FirstOffset: 15, LastOffset: 19, DeliveryState: share.Archived, DeliveryCount: 5}}
	if r.State.StartOffset != 15 || !reflect.DeepEqual(r.State.Batches, want) {
		t.Fatalf("state %+v, want start 15 and %+v", r.State, want)
	}
	sum := s.Summary(shareKey)
	if sum.ErrorCode != 0 || sum.State.LeaderEpoch != 6 || sum.State.StateEpoch != 1 || sum.State.StartOffset != 15 || sum.State.Batches != nil {
		t.Fatalf("summary %+v", sum)
	}
	// Reloading (replaying what was committed) gives the same state.
	again := newShareStateShard(3, nil)
	for _, rec := range l.records {
		if err := again.Replay(rec.Key, rec.Value); err != nil {
			t.Fatal(err)
		}
	}
	again.Loaded(l.now)
	if got := again.committedState(shareKey); !reflect.DeepEqual(got, s.committedState(shareKey)) {
		t.Fatalf("replayed %+v\nlive     %+v", got, s.committedState(shareKey))
	}
	if r := l.run(0, func(d func(SharePartitionResult)) Result {
		return again.Write(l.now, shareKey, ShareWrite{StateEpoch: 1, LeaderEpoch: 5}, d)
	}); r.ErrorCode != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("the reloaded shard forgot leader epoch 6: %+v", r)
	}
}

// A write whose append fails changes nothing: a read after it answers what was
// committed, and the next write builds on the committed state.
func TestShareStateShard_FailedWriteIsNotApplied(t *testing.T) {
	l := newShardLog(t, 500)
	s := l.s
	l.run(0, func(d func(SharePartitionResult)) Result { return s.Initialize(l.now, shareKey, 0, 0, d) })
	w := ShareWrite{LeaderEpoch: 1, Change: share.Change{StartOffset: 0, DeliveryCompleteCount: -1,
		Batches: []share.StateBatch{{FirstOffset: 0, LastOffset: 3, DeliveryState: share.Acknowledged, DeliveryCount: 1}}}}
	if r := l.run(kerr.NotCoordinator.Code, func(d func(SharePartitionResult)) Result { return s.Write(l.now, shareKey, w, d) }); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("failed write answered %+v", r)
	}
	if st := s.committedState(shareKey); len(st.Batches) != 0 {
		t.Fatalf("a failed write was applied: %+v", st)
	}
	if l := s.working[shareKey]; l == nil || len(l.State.Batches) != 0 {
		t.Fatalf("working state not rebuilt: %+v", l)
	}
}

// Delete writes a tombstone: the state is gone, live and after a reload; deleting a
// key without state writes nothing.
func TestShareStateShard_Delete(t *testing.T) {
	l := newShardLog(t, 500)
	s := l.s
	if r := l.run(0, func(d func(SharePartitionResult)) Result { return s.Delete(shareKey, d) }); r.ErrorCode != 0 || len(l.records) != 0 {
		t.Fatalf("delete of nothing: %+v, %d records", r, len(l.records))
	}
	l.run(0, func(d func(SharePartitionResult)) Result { return s.Initialize(l.now, shareKey, 3, 7, d) })
	if r := l.run(0, func(d func(SharePartitionResult)) Result { return s.Delete(shareKey, d) }); r.ErrorCode != 0 {
		t.Fatalf("delete %+v", r)
	}
	if st := s.Summary(shareKey).State; st.StartOffset != -1 || st.StateEpoch != 0 {
		t.Fatalf("deleted state still read: %+v", st)
	}
	again := newShareStateShard(500, nil)
	for _, rec := range l.records {
		_ = again.Replay(rec.Key, rec.Value)
	}
	if len(again.committed) != 0 {
		t.Fatalf("reload after the tombstone holds %d states", len(again.committed))
	}
	// A negative partition and an unknown topic are refused.
	if r := l.run(0, func(d func(SharePartitionResult)) Result {
		return s.Initialize(l.now, share.Key{GroupID: "g", Partition: -1}, 0, 0, d)
	}); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("negative partition: %+v", r)
	}
	s.partitionExists = func([16]byte, int32) bool { return false }
	if r := s.Summary(shareKey); r.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %+v", r)
	}
}

// A read in the leader epoch of a write still in flight is answered after that write
// settles, with its outcome: a reload never misses a write that commits later.
func TestShareStateShard_ReadWaitsForWritesInFlight(t *testing.T) {
	l := newShardLog(t, 100)
	s := l.s
	l.run(0, func(d func(SharePartitionResult)) Result { return s.Initialize(l.now, shareKey, 1, 0, d) })
	l.run(0, func(d func(SharePartitionResult)) Result { return s.Read(l.now, shareKey, 3, d) })
	var wrote *SharePartitionResult
	accept := []share.StateBatch{{FirstOffset: 0, LastOffset: 9, DeliveryState: share.Acknowledged, DeliveryCount: 1}}
	w := s.Write(l.now, shareKey, ShareWrite{StateEpoch: 1, LeaderEpoch: 3,
		Change: share.Change{StartOffset: 10, DeliveryCompleteCount: -1, Batches: accept}}, func(r SharePartitionResult) { wrote = &r })
	var read *SharePartitionResult
	rd := s.Read(l.now, shareKey, 3, func(r SharePartitionResult) { read = &r })
	if read != nil {
		t.Fatalf("read answered %+v while a write of the key was in flight", *read)
	}
	w.Committed(l.now, 0)
	if wrote == nil || wrote.ErrorCode != 0 {
		t.Fatalf("write: %+v", wrote)
	}
	if len(rd.Records) == 0 {
		t.Fatal("the read appended nothing to order its answer after the write")
	}
	rd.Committed(l.now, 0)
	if read == nil || read.ErrorCode != 0 || read.State.StartOffset != 10 {
		t.Fatalf("read after the write committed: %+v, want start offset 10", read)
	}
}

// A leader's write does not create a share state: a key never initialized, or deleted
// with its group, is INVALID_REQUEST; a write carrying a deleted group's (higher)
// state epoch over a state initialized again is FENCED_STATE_EPOCH.
func TestShareStateShard_WriteNeedsAnInitializedState(t *testing.T) {
	l := newShardLog(t, 100)
	s := l.s
	write := func(stateEpoch int32) int16 {
		return l.run(0, func(d func(SharePartitionResult)) Result {
			return s.Write(l.now, shareKey, ShareWrite{StateEpoch: stateEpoch, LeaderEpoch: 3,
				Change: share.Change{StartOffset: 5, DeliveryCompleteCount: -1}}, d)
		}).ErrorCode
	}
	if code := write(0); code != kerr.InvalidRequest.Code {
		t.Fatalf("write to a key never initialized: %v, want INVALID_REQUEST", kerr.ErrorForCode(code))
	}
	l.run(0, func(d func(SharePartitionResult)) Result { return s.Initialize(l.now, shareKey, 4, 0, d) })
	if code := write(4); code != 0 {
		t.Fatalf("write: %v", kerr.ErrorForCode(code))
	}
	l.run(0, func(d func(SharePartitionResult)) Result { return s.Delete(shareKey, d) })
	if code := write(4); code != kerr.InvalidRequest.Code {
		t.Fatalf("write to a deleted key: %v, want INVALID_REQUEST", kerr.ErrorForCode(code))
	}
	if st := s.Summary(shareKey).State; st.StartOffset != -1 {
		t.Fatalf("the refused write brought the state back: %+v", st)
	}
	l.run(0, func(d func(SharePartitionResult)) Result { return s.Initialize(l.now, shareKey, 1, -1, d) })
	if code := write(4); code != kerr.FencedStateEpoch.Code {
		t.Fatalf("the deleted group's write over the new group's state: %v, want FENCED_STATE_EPOCH", kerr.ErrorForCode(code))
	}
}
