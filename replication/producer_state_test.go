package replication

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/petrel-broker/petrel/segment"
)

// idempotentBatch is batch(n) from producer pid at epoch with base sequence seq.
func idempotentBatch(n int, pid int64, epoch int16, seq int32) []byte {
	b := batch(n)
	binary.BigEndian.PutUint64(b[43:], uint64(pid))
	binary.BigEndian.PutUint16(b[51:], uint16(epoch))
	binary.BigEndian.PutUint32(b[53:], uint32(seq))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func newLeader(t *testing.T, cfg segment.Config) (*Partition, string) {
	t.Helper()
	dir := t.TempDir()
	log, _, err := segment.Open(dir, cfg, segment.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := NewPartition("t", 0, log, 0, Options{BrokerID: 0})
	t.Cleanup(func() { p.Stop(false) })
	if err := p.BecomeLeaderOf(0, 0, []int32{0}, []int32{0}); err != nil {
		t.Fatal(err)
	}
	return p, dir
}

// Kafka's checks on a leader append, in one sequence of requests: the answer (offsets or
// error) and whether anything was written.
func TestProducerChecksOnLeaderAppend(t *testing.T) {
	p, _ := newLeader(t, segment.DefaultConfig())
	type step struct {
		name      string
		pid       int64
		epoch     int16
		seq       int32
		n         int
		wantErr   error
		wantFirst int64 // when no error
		written   bool
	}
	steps := []step{
		{"unknown producer at any sequence", 7, 0, 42, 2, nil, 0, true},
		{"next", 7, 0, 44, 3, nil, 2, true},
		{"next", 7, 0, 47, 1, nil, 5, true},
		{"next", 7, 0, 48, 1, nil, 6, true},
		{"next", 7, 0, 49, 2, nil, 7, true},
		{"duplicate of the newest", 7, 0, 49, 2, nil, 7, false},
		{"duplicate of the 5th newest", 7, 0, 42, 2, nil, 0, false},
		{"duplicate of the 4th newest", 7, 0, 44, 3, nil, 2, false},
		{"next", 7, 0, 51, 1, nil, 9, true},
		{"the 6th newest is no longer known", 7, 0, 42, 2, ErrOutOfOrderSequence, 0, false},
		{"a duplicate must match the last sequence too", 7, 0, 51, 2, ErrOutOfOrderSequence, 0, false},
		{"gap", 7, 0, 53, 1, ErrOutOfOrderSequence, 0, false},
		{"bumped epoch not at 0", 7, 1, 52, 1, ErrOutOfOrderSequence, 0, false},
		{"bumped epoch at 0", 7, 1, 0, 2, nil, 10, true},
		{"older epoch", 7, 0, 52, 1, ErrInvalidProducerEpoch, 0, false},
		{"old epoch's batch is no duplicate any more", 7, 0, 51, 1, ErrInvalidProducerEpoch, 0, false},
		{"another producer", 8, 3, 0, 1, nil, 12, true},
		{"next of the bumped epoch", 7, 1, 2, 1, nil, 13, true},
	}
	for i, s := range steps {
		leo := p.State().LogEndOffset
		info, err := p.AppendAsLeader(idempotentBatch(s.n, s.pid, s.epoch, s.seq), 0)
		if !errors.Is(err, s.wantErr) {
			t.Fatalf("step %d (%s): error %v, want %v", i, s.name, err, s.wantErr)
		}
		if err == nil && (info.FirstOffset != s.wantFirst || info.LastOffset != s.wantFirst+int64(s.n)-1) {
			t.Fatalf("step %d (%s): offsets %d..%d, want first %d", i, s.name, info.FirstOffset, info.LastOffset, s.wantFirst)
		}
		if written := p.State().LogEndOffset != leo; written != s.written {
			t.Fatalf("step %d (%s): written %v, want %v", i, s.name, written, s.written)
		}
		if err == nil && !s.written && info.Batches != 0 {
			t.Fatalf("step %d (%s): a duplicate reports %d batches", i, s.name, info.Batches)
		}
	}
}

func TestSequenceWrapsAtMaxInt32(t *testing.T) {
	p, _ := newLeader(t, segment.DefaultConfig())
	if _, err := p.AppendAsLeader(idempotentBatch(2, 1, 0, math.MaxInt32-1), 0); err != nil {
		t.Fatal(err)
	}
	if got := p.producers.Entry(1).LastSequence(); got != math.MaxInt32 {
		t.Fatalf("last sequence %d", got)
	}
	if _, err := p.AppendAsLeader(idempotentBatch(1, 1, 0, 1), 0); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("sequence 1 after the wrap point: %v", err)
	}
	if _, err := p.AppendAsLeader(idempotentBatch(3, 1, 0, 0), 0); err != nil {
		t.Fatalf("sequence 0 after 2^31-1: %v", err)
	}
	// A batch that itself wraps: base 2^31-1, 2 records → last sequence 0.
	if got := lastSequenceOf(segment.BatchHeader{BaseSequence: math.MaxInt32, LastOffsetDelta: 1}); got != 0 {
		t.Fatalf("wrapping batch's last sequence %d", got)
	}
}

// Five pipelined producers each with 5 requests in flight: checks run in the order the
// appends reach the partition lock, so in-order batches of one producer all succeed.
func TestConcurrentProducersInOrder(t *testing.T) {
	p, _ := newLeader(t, segment.DefaultConfig())
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	for pid := int64(0); pid < 5; pid++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := int32(0); seq < 500; seq += 2 {
				if _, err := p.AppendAsLeader(idempotentBatch(2, pid, 0, seq), 0); err != nil {
					errs <- err
					return
				}
				if _, err := p.AppendAsLeader(idempotentBatch(2, pid, 0, seq), 0); err != nil { // a retry
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if st := p.State(); st.LogEndOffset != 5*500 {
		t.Fatalf("log end offset %d, want %d", st.LogEndOffset, 5*500)
	}
}

// A multi-batch append (not from Produce, which sends one batch per partition) checks its
// batches against each other.
func TestMultiBatchAppendChecksInOrder(t *testing.T) {
	p, _ := newLeader(t, segment.DefaultConfig())
	two := append(idempotentBatch(2, 3, 0, 0), idempotentBatch(1, 3, 0, 2)...)
	if _, err := p.AppendAsLeader(two, 0); err != nil {
		t.Fatal(err)
	}
	gap := append(idempotentBatch(1, 3, 0, 3), idempotentBatch(1, 3, 0, 5)...)
	if _, err := p.AppendAsLeader(gap, 0); !errors.Is(err, ErrOutOfOrderSequence) || p.State().LogEndOffset != 3 {
		t.Fatalf("gap inside an append: %v, log end %d", err, p.State().LogEndOffset)
	}
}

// A follower builds the state from what it appends, so after a leader change it
// recognises a retry of a batch its predecessor wrote.
func TestFollowerRebuildsProducerState(t *testing.T) {
	leader, _ := newLeader(t, segment.DefaultConfig())
	follower, _ := newPartition(t, false)
	if err := follower.BecomeFollower(0, 0); err != nil {
		t.Fatal(err)
	}
	for seq := int32(0); seq < 12; seq += 3 {
		if _, err := leader.AppendAsLeader(idempotentBatch(3, 9, 2, seq), 0); err != nil {
			t.Fatal(err)
		}
	}
	r, err := leader.log.Read(0, 1<<20, 12)
	if err != nil {
		t.Fatal(err)
	}
	records, err := r.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if err := follower.AppendAsFollower(records, 0, 12, 0); err != nil {
		t.Fatal(err)
	}
	if err := follower.BecomeLeaderOf(1, 0, []int32{0}, []int32{0}); err != nil {
		t.Fatal(err)
	}
	info, err := follower.AppendAsLeader(idempotentBatch(3, 9, 2, 9), 0)
	if err != nil || info.FirstOffset != 9 || info.Batches != 0 || follower.State().LogEndOffset != 12 {
		t.Fatalf("retry at the new leader: %+v %v (log end %d)", info, err, follower.State().LogEndOffset)
	}
	if !slices.EqualFunc(leader.producers.Entries(), follower.producers.Entries(), entriesEqual) {
		t.Fatalf("states differ:\n%+v\n%+v", leader.producers.Entries(), follower.producers.Entries())
	}
}

func entriesEqual(a, b ProducerEntry) bool {
	return a.ProducerID == b.ProducerID && a.ProducerEpoch == b.ProducerEpoch && a.LastTimestamp == b.LastTimestamp &&
		slices.Equal(a.Batches, b.Batches)
}

// Truncation (a follower cutting its divergent tail) rebuilds the state: the cut batch
// is no longer known, so its retry is appended again.
func TestTruncationRebuildsProducerState(t *testing.T) {
	p, dir := newPartition(t, false)
	if err := p.BecomeLeaderOf(0, 0, []int32{0}, []int32{0}); err != nil {
		t.Fatal(err)
	}
	for seq := int32(0); seq < 4; seq++ {
		if _, err := p.AppendAsLeader(idempotentBatch(1, 5, 0, seq), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.WriteProducerSnapshot(); err != nil { // at offset 4, above the cut
		t.Fatal(err)
	}
	if err := p.BecomeFollower(1, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := p.TruncateTo(2); err != nil {
		t.Fatal(err)
	}
	if offs, _ := ProducerSnapshotOffsets(dir); len(offs) != 0 {
		t.Fatalf("snapshots above the truncation remain: %v", offs)
	}
	if e := p.producers.Entry(5); e == nil || e.LastSequence() != 1 || len(e.Batches) != 2 {
		t.Fatalf("entry after truncation %+v", e)
	}
	if err := p.TruncateFullyAndStartAt(10); err != nil {
		t.Fatal(err)
	}
	if p.producers.Len() != 0 {
		t.Fatal("state survives a full truncation")
	}
}

// Snapshots: written at a segment roll (the state below the new segment) and on demand
// at the log end; loading prefers the newest, replays the log after it, ignores and
// removes a corrupt one, and without any rebuilds from the log alone — all to the same
// state.
func TestProducerSnapshotsAndRecovery(t *testing.T) {
	cfg := segment.DefaultConfig()
	cfg.SegmentBytes = 400 // a few batches per segment
	p, dir := newLeader(t, cfg)
	for seq := int32(0); seq < 60; seq += 2 {
		if _, err := p.AppendAsLeader(idempotentBatch(2, int64(seq%3), 0, seqFor(seq)), 0); err != nil {
			t.Fatal(err)
		}
	}
	want := p.producers.Entries()
	offs, err := ProducerSnapshotOffsets(dir)
	if err != nil || len(offs) < 3 {
		t.Fatalf("roll snapshots %v %v", offs, err)
	}
	for _, off := range offs {
		if !slices.ContainsFunc(p.log.Segments(), func(s segment.SegmentInfo) bool { return s.BaseOffset == off }) {
			t.Fatalf("snapshot %d is at no segment base", off)
		}
	}
	reload := func(name string, wantSnapshot int64) {
		t.Helper()
		report, err := p.LoadProducerState(0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if report.SnapshotOffset != wantSnapshot {
			t.Fatalf("%s: loaded snapshot %d, want %d (%+v)", name, report.SnapshotOffset, wantSnapshot, report)
		}
		if got := p.producers.Entries(); !slices.EqualFunc(got, want, entriesEqual) {
			t.Fatalf("%s: state\n%+v\nwant\n%+v", name, got, want)
		}
	}
	reload("from the last roll snapshot", offs[len(offs)-1])
	if err := os.WriteFile(ProducerSnapshotPath(dir, offs[len(offs)-1]), []byte("garbage garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	reload("past a corrupt snapshot", offs[len(offs)-2])
	if _, err := os.Stat(ProducerSnapshotPath(dir, offs[len(offs)-1])); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("corrupt snapshot not removed: %v", err)
	}
	if _, err := deleteProducerSnapshots(dir, func(int64) bool { return true }); err != nil {
		t.Fatal(err)
	}
	reload("from the log alone", -1)
	if err := p.WriteProducerSnapshot(); err != nil {
		t.Fatal(err)
	}
	reload("from the clean-shutdown snapshot", p.State().LogEndOffset)
}

// seqFor gives producer seq%3 consecutive sequences: each producer's n-th batch starts
// at 2n.
func seqFor(seq int32) int32 { return seq / 6 * 2 }

func TestRetentionTrimsSnapshotsButKeepsProducers(t *testing.T) {
	cfg := segment.DefaultConfig()
	cfg.SegmentBytes = 300
	cfg.RetentionBytes = 300
	p, dir := newLeader(t, cfg)
	for seq := int32(0); seq < 20; seq++ {
		if _, err := p.AppendAsLeader(idempotentBatch(1, 4, 0, seq), 0); err != nil {
			t.Fatal(err)
		}
	}
	res, err := p.EnforceRetention()
	if err != nil || len(res.DeletedSegments) == 0 {
		t.Fatalf("retention %+v %v", res, err)
	}
	first := p.log.FirstSegmentBaseOffset()
	offs, _ := ProducerSnapshotOffsets(dir)
	if len(offs) == 0 || offs[0] < first {
		t.Fatalf("snapshots %v, oldest segment %d", offs, first)
	}
	if e := p.producers.Entry(4); e == nil || e.LastSequence() != 19 {
		t.Fatalf("producer lost by retention: %+v", e)
	}
	if _, err := p.LoadProducerState(0, 0); err != nil {
		t.Fatal(err)
	}
	if e := p.producers.Entry(4); e == nil || e.LastSequence() != 19 {
		t.Fatalf("producer lost after reload: %+v", e)
	}
}

func TestProducerExpiration(t *testing.T) {
	s := NewProducerStates()
	s.Update(segment.BatchHeader{ProducerID: 1, BaseSequence: 0, MaxTimestamp: 1000, RecordCount: 1})
	s.Update(segment.BatchHeader{ProducerID: 2, BaseSequence: 0, MaxTimestamp: 5000, RecordCount: 1})
	if n := s.ExpireProducers(10999, 10000); n != 0 {
		t.Fatalf("expired %d too early", n)
	}
	if n := s.ExpireProducers(11000, 10000); n != 1 || s.Entry(1) != nil || s.Entry(2) == nil {
		t.Fatalf("expired %d; entries %+v", n, s.Entries())
	}
}

func TestProducerSnapshotRoundTripAndCorruption(t *testing.T) {
	s := NewProducerStates()
	for i := int32(0); i < 8; i++ {
		s.Update(segment.BatchHeader{ProducerID: int64(i % 3), ProducerEpoch: 2, BaseOffset: int64(i) * 10,
			BaseSequence: i, LastOffsetDelta: 4, MaxTimestamp: int64(i), RecordCount: 5})
	}
	b := EncodeProducerSnapshot(s)
	back, err := DecodeProducerSnapshot(b)
	if err != nil || !slices.EqualFunc(back.Entries(), s.Entries(), entriesEqual) {
		t.Fatalf("round trip: %v\n%+v\n%+v", err, back, s.Entries())
	}
	for i := range b {
		c := slices.Clone(b)
		c[i] ^= 0x40
		if _, err := DecodeProducerSnapshot(c); !errors.Is(err, ErrCorruptProducerSnapshot) {
			t.Fatalf("flipped byte %d: %v", i, err)
		}
	}
	for n := range len(b) {
		if _, err := DecodeProducerSnapshot(b[:n]); !errors.Is(err, ErrCorruptProducerSnapshot) {
			t.Fatalf("cut at %d: %v", n, err)
		}
	}
}

func FuzzDecodeProducerSnapshot(f *testing.F) {
	s := NewProducerStates()
	s.Update(segment.BatchHeader{ProducerID: 3, ProducerEpoch: 1, BaseOffset: 5, BaseSequence: 7, LastOffsetDelta: 1, RecordCount: 2})
	f.Add(EncodeProducerSnapshot(s))
	f.Add(EncodeProducerSnapshot(NewProducerStates()))
	f.Add([]byte{0, 1, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := DecodeProducerSnapshot(b)
		if err != nil {
			if !errors.Is(err, ErrCorruptProducerSnapshot) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		again, err := DecodeProducerSnapshot(EncodeProducerSnapshot(st))
		if err != nil || !slices.EqualFunc(again.Entries(), st.Entries(), entriesEqual) {
			t.Fatalf("re-encoding a decoded snapshot: %v", err)
		}
	})
}

// BenchmarkProducerStateHeap reports the heap a partition's producer state holds per
// 10,000 producer ids, with one batch and with the full five batches retained each.
//
//	go test ./replication/ -run '^$' -bench BenchmarkProducerStateHeap
func BenchmarkProducerStateHeap(b *testing.B) {
	for _, batches := range []int{1, ProducerBatchesRetained} {
		b.Run(fmt.Sprintf("batches=%d", batches), func(b *testing.B) {
			var perTenThousand float64
			for i := 0; i < b.N; i++ {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				s := NewProducerStates()
				offset := int64(0)
				for pid := int64(0); pid < 10000; pid++ {
					for seq := int32(0); seq < int32(batches); seq++ {
						s.Update(segment.BatchHeader{ProducerID: pid, BaseOffset: offset, BaseSequence: seq * 10,
							LastOffsetDelta: 9, RecordCount: 10, MaxTimestamp: offset})
						offset += 10
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				perTenThousand = float64(after.HeapAlloc) - float64(before.HeapAlloc)
				runtime.KeepAlive(s)
			}
			b.ReportMetric(perTenThousand, "heap-bytes/10k-producers")
		})
	}
}

// A rebuild that fails during truncation must not leave the old state, which still
// lists the cut batches: a retried truncation has nothing left to cut, and as leader a
// retry of a cut batch would be "deduplicated" with offsets that no longer exist. The
// state is reset instead, so the retry is appended (an unknown producer, KAFKA-7190).
func TestFailedRebuildOnTruncationResetsProducerState(t *testing.T) {
	p, dir := newPartition(t, false)
	if err := p.BecomeLeaderOf(0, 0, []int32{0}, []int32{0}); err != nil {
		t.Fatal(err)
	}
	for seq := int32(0); seq < 4; seq++ {
		if _, err := p.AppendAsLeader(idempotentBatch(1, 5, 0, seq), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.BecomeFollower(1, 1); err != nil {
		t.Fatal(err)
	}
	// An unreadable snapshot at offset 0 (a link to a directory: refused even as root).
	if err := os.Symlink(t.TempDir(), ProducerSnapshotPath(dir, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.TruncateTo(2); err == nil {
		t.Fatal("the rebuild did not fail")
	}
	if leo, err := p.TruncateTo(2); err != nil || leo != 2 {
		t.Fatalf("retried truncation: %d %v", leo, err)
	}
	if err := p.BecomeLeaderOf(2, 0, []int32{0}, []int32{0}); err != nil {
		t.Fatal(err)
	}
	info, err := p.AppendAsLeader(idempotentBatch(1, 5, 0, 2), 0)
	if err != nil || info.Batches != 1 || info.FirstOffset != 2 || p.State().LogEndOffset != 3 {
		t.Fatalf("retry of a cut batch: %+v %v (log end %d)", info, err, p.State().LogEndOffset)
	}
}

// A writer bound to an older leader epoch (a stale coordinator) writes nothing.
func TestAppendAsLeaderInEpochRefusesStaleEpoch(t *testing.T) {
	p, _ := newLeader(t, segment.DefaultConfig())
	if err := p.BecomeLeaderOf(1, 0, []int32{0}, []int32{0}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeaderInEpoch(batch(1), 0, 0); !errors.Is(err, ErrFencedLeaderEpoch) {
		t.Fatalf("stale epoch: %v", err)
	}
	if _, err := p.AppendAsLeaderInEpoch(batch(1), 1, 0); err != nil || p.State().LogEndOffset != 1 {
		t.Fatalf("current epoch: %v", err)
	}
}
