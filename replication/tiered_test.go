package replication

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kerr"
)

// fakeRemoteLog is a RemoteLog answering from fixed values and counting its calls.
type fakeRemoteLog struct {
	found    segment.TimestampOffset
	ok       bool
	aux      RemoteLogAuxState
	auxErr   error
	lookups  int
	auxAsked []int64 // (epoch, offset) pairs asked of FetchRemoteLogAuxState
}

func (f *fakeRemoteLog) FindOffsetByTimestamp(_ context.Context, _ string, _ int32, _, _ int64, _ []segment.EpochEntry) (segment.TimestampOffset, bool, error) {
	f.lookups++
	return f.found, f.ok, nil
}

func (f *fakeRemoteLog) FetchRemoteLogAuxState(_ context.Context, _ string, _ int32, epoch int32, offset int64) (RemoteLogAuxState, error) {
	f.auxAsked = append(f.auxAsked, int64(epoch), offset)
	return f.aux, f.auxErr
}

// epochEntries builds epoch cache entries from (epoch, start offset) pairs.
func epochEntries(pairs ...int64) []segment.EpochEntry {
	var out []segment.EpochEntry
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, segment.EpochEntry{Epoch: int32(pairs[i]), StartOffset: pairs[i+1]})
	}
	return out
}

// newTieredPartition returns a replica with remote storage enabled whose every batch is
// a segment of its own; local.retention.bytes 0 deletes every copied closed segment.
func newTieredPartition(t *testing.T, remote bool) *Partition {
	t.Helper()
	cfg := segment.DefaultConfig()
	cfg.SegmentBytes = int64(len(batch(2))) + 1
	cfg.RemoteStorageEnable = remote
	cfg.LocalRetentionBytes = 0
	log, _, err := segment.Open(t.TempDir(), cfg, segment.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := NewPartition("t", 0, log, 0, Options{BrokerID: 0})
	t.Cleanup(func() { p.Stop(false) })
	return p
}

// tieredLeader is a leader in epoch 1 (replicas 0 and 1, ISR {0}) of five 2-record
// batches, segments [0,2) [2,4) [4,6) [6,8) and the active [8,10).
func tieredLeader(t *testing.T, remote bool) *Partition {
	t.Helper()
	p := newTieredPartition(t, remote)
	if err := p.BecomeLeaderOf(1, 0, []int32{0}, []int32{0, 1}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, err := p.AppendAsLeader(batch(2), 0); err != nil {
			t.Fatal(err)
		}
	}
	if st := p.State(); st.HighWatermark != 10 {
		t.Fatalf("high watermark %d", st.HighWatermark)
	}
	return p
}

func listOffset(t *testing.T, p *Partition, ts int64) ListedOffset {
	t.Helper()
	o, err := p.ListOffset(OffsetQuery{Timestamp: ts, CurrentLeaderEpoch: -1, ReplicaID: -1})
	if err != nil {
		t.Fatalf("ListOffsets %d: %v", ts, err)
	}
	return o
}

// TestPartitionTieredRetentionAndOffsets: local deletion waits for SetRemoteLogState's
// highest copied offset; ListOffsets -2 answers the log start over both tiers, -4 the
// local one, -5 the highest copied offset (-1 before any copy); fetches below the local
// log start are ErrOffsetMovedToTieredStorage for consumers and followers alike;
// DeleteRecords below the local start moves the log start only, above it both.
func TestPartitionTieredRetentionAndOffsets(t *testing.T) {
	p := tieredLeader(t, true)
	if res, err := p.EnforceRetention(); err != nil || len(res.DeletedSegments) != 0 {
		t.Fatalf("nothing copied yet: %+v %v", res, err)
	}
	if o := listOffset(t, p, -5); o != (ListedOffset{-1, -1, -1}) {
		t.Fatalf("latest tiered before any copy: %+v", o)
	}
	p.SetRemoteLogState(5, 0)
	if res, err := p.EnforceRetention(); err != nil || !slices.Equal(res.DeletedSegments, []int64{0, 2, 4}) {
		t.Fatalf("copied up to 5: %+v %v", res, err)
	}
	for _, c := range []struct {
		ts   int64
		want ListedOffset
	}{{-2, ListedOffset{0, -1, 1}}, {-4, ListedOffset{6, -1, 1}}, {-5, ListedOffset{5, -1, 1}}} {
		if o := listOffset(t, p, c.ts); o != c.want {
			t.Fatalf("ListOffsets %d: %+v, want %+v", c.ts, o, c.want)
		}
	}
	if st := p.State(); st.LogStartOffset != 0 {
		t.Fatalf("state's log start %d", st.LogStartOffset)
	}
	if _, err := p.Read(3, 1<<20, -1, LeaderOnly); !errors.Is(err, ErrOffsetMovedToTieredStorage) {
		t.Fatalf("consumer read below the local log start: %v", err)
	}
	if res, err := p.Read(6, 1<<20, -1, LeaderOnly); err != nil || len(res.Records) == 0 {
		t.Fatalf("read at the local log start: %v", err)
	}
	if _, _, err := followerRead(p, FollowerFetch{ReplicaID: 1, FetchOffset: 2, CurrentLeaderEpoch: 1, LastFetchedEpoch: -1, MaxBytes: 1 << 20, LogStartOffset: 0}, time.Now()); !errors.Is(err, ErrOffsetMovedToTieredStorage) {
		t.Fatalf("follower fetch below the local log start: %v", err)
	}

	if _, err := p.DeleteRecordsBefore(3); err != nil {
		t.Fatal(err)
	}
	if o := listOffset(t, p, -2); o.Offset != 3 || listOffset(t, p, -4).Offset != 6 {
		t.Fatalf("after DeleteRecords(3): earliest %+v", o)
	}
	if _, err := p.Read(2, 1<<20, -1, LeaderOnly); errors.Is(err, ErrOffsetMovedToTieredStorage) || err == nil {
		t.Fatalf("read below the log start: %v", err)
	}
	if _, err := p.DeleteRecordsBefore(8); err != nil {
		t.Fatal(err)
	}
	// [6,8) is not copied but wholly below the log start: it goes uncopied, as Kafka's
	// deleteLogStartOffsetBreachedSegments deletes it.
	if o := listOffset(t, p, -4); o.Offset != 8 || listOffset(t, p, -2).Offset != 8 {
		t.Fatalf("after DeleteRecords(8): earliest local %+v", o)
	}
	var first int64
	p.WithLog(func(l *segment.Log) error { first = l.FirstSegmentBaseOffset(); return nil }) //nolint:errcheck // running
	if first != 8 {
		t.Fatalf("after DeleteRecords(8): first local segment %d, want 8", first)
	}
	p.SetRemoteLogState(7, -1)
	if res, err := p.EnforceRetention(); err != nil || len(res.DeletedSegments) != 0 {
		t.Fatalf("copied up to 7: %+v %v", res, err)
	}
	// Remote retention moved the remote log start past the log start.
	p.SetRemoteLogState(7, 9)
	if o := listOffset(t, p, -2); o.Offset != 9 || listOffset(t, p, -4).Offset != 9 {
		t.Fatalf("remote log start 9: earliest %+v", o)
	}
}

// TestPartitionTieredTimeLookup: a time query on a replica whose log starts in remote
// storage asks the RemoteLog first, then the local log from its local start; without a
// RemoteLog the local log answers alone.
func TestPartitionTieredTimeLookup(t *testing.T) {
	p := tieredLeader(t, true)
	p.SetRemoteLogState(5, 0)
	if _, err := p.EnforceRetention(); err != nil {
		t.Fatal(err)
	}
	if o := listOffset(t, p, 0); o.Offset != 6 {
		t.Fatalf("no RemoteLog: %+v, want the local log start 6", o)
	}
	remote := &fakeRemoteLog{found: segment.TimestampOffset{Offset: 1, Timestamp: 42}, ok: true}
	p.opts.Remote = remote
	if o := listOffset(t, p, 0); o != (ListedOffset{1, 42, 1}) || remote.lookups != 1 {
		t.Fatalf("found remotely: %+v (lookups %d)", o, remote.lookups)
	}
	remote.ok = false
	if o := listOffset(t, p, 0); o.Offset != 6 || remote.lookups != 2 {
		t.Fatalf("not found remotely: %+v (lookups %d)", o, remote.lookups)
	}
	// -3, the largest timestamp, is answered from the local segments only, as in Kafka.
	if o := listOffset(t, p, -3); o.Offset < 6 || remote.lookups != 2 {
		t.Fatalf("max timestamp: %+v (lookups %d)", o, remote.lookups)
	}
}

// TestPartitionWithoutRemoteStorage: without remote.storage.enable the remote state moves
// nothing, -4 is the earliest and -5 is -1, as before tiered storage.
func TestPartitionWithoutRemoteStorage(t *testing.T) {
	p := tieredLeader(t, false)
	p.SetRemoteLogState(9, 6)
	if o := listOffset(t, p, -2); o.Offset != 0 || listOffset(t, p, -4).Offset != 0 || listOffset(t, p, -5) != (ListedOffset{-1, -1, -1}) {
		t.Fatalf("earliest %+v", o)
	}
	if _, err := p.DeleteRecordsBefore(3); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Read(1, 1<<20, -1, LeaderOnly); !errors.Is(err, segment.ErrOffsetOutOfRange) {
		t.Fatalf("read below the log start: %v", err)
	}
	if o := listOffset(t, p, -4); o.Offset != 3 || listOffset(t, p, -2).Offset != 3 {
		t.Fatalf("earliest local %+v", o)
	}
}

// TestBuildFromRemote: a follower starts afresh at the remote segment's end with the
// leader's log start, the remote epochs and the remote producer state (written as the
// snapshot at the new start).
func TestBuildFromRemote(t *testing.T) {
	p := newTieredPartition(t, true)
	if err := p.BecomeFollower(2, 1); err != nil {
		t.Fatal(err)
	}
	producers := NewProducerStates()
	producers.Update(segment.BatchHeader{BaseOffset: 14, LastOffsetDelta: 1, MaxTimestamp: 1, ProducerID: 7, ProducerEpoch: 0,
		BaseSequence: 0, RecordCount: 2, PartitionLeaderEpoch: 1, ControlType: -1, ControlCoordinatorEpoch: -1})
	aux := RemoteLogAuxState{NextOffset: 20, Epochs: epochEntries(0, 0, 1, 12), ProducerSnapshot: EncodeProducerSnapshot(producers)}
	if err := p.BuildFromRemote(aux, 5); err != nil {
		t.Fatal(err)
	}
	st := p.State()
	if st.LogStartOffset != 5 || st.LogEndOffset != 20 || st.HighWatermark != 20 || p.TieredOffsets().LocalLogStartOffset != 20 {
		t.Fatalf("state %+v", st)
	}
	p.WithLog(func(l *segment.Log) error {
		if e := l.LeaderEpochs().Entries(); !slices.Equal(e, epochEntries(0, 5, 1, 12)) {
			t.Fatalf("epochs %+v", e)
		}
		return nil
	})
	if e := p.producers.Entries(); len(e) != 1 || e[0].ProducerID != 7 {
		t.Fatalf("producers %+v", e)
	}
	if _, err := os.Stat(ProducerSnapshotPath(p.log.Dir(), 20)); err != nil {
		t.Fatalf("producer snapshot at 20: %v", err)
	}
	if err := p.BuildFromRemote(RemoteLogAuxState{NextOffset: 20, ProducerSnapshot: []byte{1}}, 5); err == nil {
		t.Fatal("a corrupt producer snapshot was accepted")
	}
}

// TestFetchServerAnswersConsumersOutOfRangeBelowTheLocalLogStart: a consumer's fetch of
// an offset in remote storage only reaches the remote read seam (readRemote), which
// answers OFFSET_OUT_OF_RANGE until remote reads exist; Kafka never sends
// OFFSET_MOVED_TO_TIERED_STORAGE to a consumer. At the local log start it reads.
func TestFetchServerAnswersConsumersOutOfRangeBelowTheLocalLogStart(t *testing.T) {
	s, src := fetchServer(t, 0, 1)
	p := tieredLeader(t, true)
	p.SetRemoteLogState(5, 0)
	if _, err := p.EnforceRetention(); err != nil {
		t.Fatal(err)
	}
	src.parts["t"] = p
	for _, c := range []struct {
		offset int64
		code   int16
	}{{2, kerr.OffsetOutOfRange.Code}, {6, 0}} {
		r := consumerFetch(12, 1<<20, "t")
		r.Topics[0].Partitions[0].FetchOffset = c.offset
		a, _, _ := s.Read(r, nil)
		sp := a.Topics[0].Partitions[0]
		held := a.Held(0) != nil
		a.Release()
		if sp.ErrorCode != c.code || held != (c.code == 0) {
			t.Fatalf("offset %d: code %d, records %v", c.offset, sp.ErrorCode, held)
		}
	}
}

// TestSetRemoteLogStateConcurrently: the remote log manager's reports race appends,
// retention, DeleteRecords, reads and ListOffsets; every view keeps log start ≤ local
// log start ≤ log end, and no segment goes before it is copied (run under -race).
func TestSetRemoteLogStateConcurrently(t *testing.T) {
	p := tieredLeader(t, true)
	var wg sync.WaitGroup
	const rounds = 300
	wg.Add(3)
	go func() {
		defer wg.Done()
		for i := 0; i < rounds; i++ {
			if _, err := p.AppendAsLeader(batch(2), 0); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < rounds; i++ {
			hw := p.State().HighWatermark
			p.SetRemoteLogState(hw/2, hw/4)
			if _, err := p.EnforceRetention(); err != nil {
				t.Error(err)
				return
			}
			if i%50 == 0 {
				if _, err := p.DeleteRecordsBefore(hw / 3); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < rounds; i++ {
			tiers := p.TieredOffsets()
			st := p.State()
			if tiers.LogStartOffset > tiers.LocalLogStartOffset || tiers.LocalLogStartOffset > st.LogEndOffset {
				t.Errorf("offsets %+v, log end %d", tiers, st.LogEndOffset)
				return
			}
			if _, err := p.ListOffset(OffsetQuery{Timestamp: -4, CurrentLeaderEpoch: -1, ReplicaID: -1}); err != nil {
				t.Error(err)
				return
			}
			_, err := p.Read(tiers.LogStartOffset, 1<<10, -1, LeaderOnly)
			if err != nil && !errors.Is(err, ErrOffsetMovedToTieredStorage) && !errors.Is(err, segment.ErrOffsetOutOfRange) {
				t.Error(err)
				return
			}
		}
	}()
	wg.Wait()
	tiers := p.TieredOffsets()
	p.WithLog(func(l *segment.Log) error {
		// The reports only grew (half the growing high watermark): every offset below
		// the first local segment was copied before its segment went.
		if first := l.FirstSegmentBaseOffset(); first-1 > tiers.HighestCopiedOffset {
			t.Fatalf("first local segment %d with highest copied %d", first, tiers.HighestCopiedOffset)
		}
		return nil
	})
}
