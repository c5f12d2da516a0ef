package replication

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"testing"

	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// transactionalBatch is idempotentBatch with the transactional attribute.
func transactionalBatch(n int, pid int64, epoch int16, seq int32) []byte {
	b := idempotentBatch(n, pid, epoch, seq)
	binary.BigEndian.PutUint16(b[21:], binary.BigEndian.Uint16(b[21:])|0x10)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// markerBatch is a transaction marker as the coordinator writes it.
func markerBatch(pid int64, epoch int16, commit bool) []byte {
	key := []byte{0, 0, 0, 0}
	if commit {
		key[3] = 1
	}
	rec := kmsg.Record{Key: key, Value: []byte{0, 0, 0, 0, 0, 3}}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	batch := kmsg.RecordBatch{Magic: 2, Attributes: 0x30, ProducerID: pid, ProducerEpoch: epoch, FirstSequence: -1,
		NumRecords: 1, Records: rec.AppendTo(nil)}
	out := batch.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// The last stable offset stops at the oldest ongoing transaction; read_committed reads
// up to it and is told the aborted transactions; all of it is rebuilt identically from
// snapshots and the log.
func TestTransactionsLastStableOffsetAndAborted(t *testing.T) {
	cfg := segment.DefaultConfig()
	cfg.SegmentBytes = 300 // a few batches per segment, so that snapshots exist
	p, _ := newLeader(t, cfg)
	app := func(b []byte) segment.AppendInfo {
		t.Helper()
		info, err := p.AppendAsLeader(b, 0)
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	app(batch(2))                                // 0-1 plain
	first := app(transactionalBatch(2, 5, 0, 0)) // 2-3 producer 5
	app(transactionalBatch(2, 6, 0, 0))          // 4-5 producer 6
	if st := p.State(); st.LastStableOffset != first.FirstOffset {
		t.Fatalf("LSO %d with producer 5's transaction open at %d (HW %d)", st.LastStableOffset, first.FirstOffset, st.HighWatermark)
	}
	abort := app(markerBatch(5, 0, false)) // 6 abort producer 5
	if st := p.State(); st.LastStableOffset != 4 {
		t.Fatalf("LSO %d after the abort, want 4 (producer 6 still open)", st.LastStableOffset)
	}
	app(markerBatch(6, 0, true)) // 7 commit producer 6
	app(transactionalBatch(2, 5, 0, 2))
	app(markerBatch(5, 0, false))
	end := p.State().LogEndOffset
	if st := p.State(); st.LastStableOffset != end {
		t.Fatalf("LSO %d with no transaction open, want %d", st.LastStableOffset, end)
	}
	res, err := p.ReadIsolated(0, 1<<20, -1, LeaderOnly, true)
	if err != nil {
		t.Fatal(err)
	}
	wantAborted := []AbortedTxn{ // the LSO after the first abort: producer 6's transaction at 4
		{ProducerID: 5, FirstOffset: first.FirstOffset, LastOffset: abort.FirstOffset, LastStableOffset: 4},
		{ProducerID: 5, FirstOffset: 8, LastOffset: 10, LastStableOffset: 11}}
	if !slices.Equal(res.Aborted, wantAborted) {
		t.Fatalf("aborted %+v, want %+v", res.Aborted, wantAborted)
	}
	if got := p.producers.AbortedBetween(7, 8); len(got) != 0 {
		t.Fatalf("aborted in [7, 8): %+v", got)
	}
	if res, _ := p.Read(0, 1<<20, -1, LeaderOnly); res.Aborted != nil {
		t.Fatal("read_uncommitted got aborted transactions")
	}
	// An open transaction again, then a rebuild from snapshot and log gives the same.
	app(transactionalBatch(1, 6, 0, 2))
	want, wantLSO, wantAll := p.producers.Entries(), p.State().LastStableOffset, p.producers.Aborted()
	if err := p.WriteProducerSnapshot(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"from the shutdown snapshot", "from the log"} {
		if _, err := p.LoadProducerState(0, 0); err != nil {
			t.Fatal(err)
		}
		if got := p.producers.Entries(); !slices.EqualFunc(got, want, func(a, b ProducerEntry) bool {
			return entriesEqual(a, b) && a.TxnOpen == b.TxnOpen && a.TxnFirstOffset == b.TxnFirstOffset
		}) {
			t.Fatalf("%s: entries\n%+v\nwant\n%+v", name, got, want)
		}
		if got := p.State().LastStableOffset; got != wantLSO {
			t.Fatalf("%s: LSO %d, want %d", name, got, wantLSO)
		}
		if got := p.producers.Aborted(); !slices.Equal(got, wantAll) {
			t.Fatalf("%s: aborted %+v, want %+v", name, got, wantAll)
		}
		if _, err := deleteProducerSnapshots(p.log.Dir(), func(int64) bool { return true }); err != nil {
			t.Fatal(err)
		}
	}
}

// markerBatchFrom is markerBatch written by a coordinator in coordinatorEpoch.
func markerBatchFrom(pid int64, epoch int16, commit bool, coordinatorEpoch int32) []byte {
	b := markerBatch(pid, epoch, commit)
	// The record's value ends the batch: version int16, then coordinatorEpoch int32, then
	// the header count varint (0).
	binary.BigEndian.PutUint32(b[len(b)-5:], uint32(coordinatorEpoch))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// A marker from an older transaction coordinator than the producer's last marker is
// TRANSACTION_COORDINATOR_FENCED; the coordinator epoch survives snapshot and rebuild.
func TestMarkerCoordinatorEpochFenced(t *testing.T) {
	p, _ := newLeader(t, segment.DefaultConfig())
	const pid = 12
	if _, err := p.AppendAsLeader(transactionalBatch(1, pid, 0, 0), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(markerBatchFrom(pid, 0, true, 5), 0); err != nil {
		t.Fatal(err)
	}
	if e := p.producers.Entry(pid); e.CoordinatorEpoch != 5 {
		t.Fatalf("coordinator epoch %d after the marker, want 5", e.CoordinatorEpoch)
	}
	end := p.State().LogEndOffset
	if _, err := p.AppendAsLeader(markerBatchFrom(pid, 0, false, 4), 0); !errors.Is(err, ErrTransactionCoordinatorFenced) {
		t.Fatalf("marker of coordinator epoch 4: %v", err)
	}
	if got := p.State().LogEndOffset; got != end {
		t.Fatalf("the fenced marker was written: log end %d, was %d", got, end)
	}
	if _, err := p.AppendAsLeader(markerBatchFrom(pid, 0, true, 5), 0); err != nil {
		t.Fatalf("marker of the same coordinator epoch again: %v", err)
	}
	if _, err := p.AppendAsLeader(markerBatchFrom(pid, 0, false, 6), 0); err != nil {
		t.Fatalf("marker of a newer coordinator: %v", err)
	}
	if err := p.WriteProducerSnapshot(); err != nil {
		t.Fatal(err)
	}
	for _, from := range []string{"the snapshot", "the log"} {
		if _, err := p.LoadProducerState(0, 0); err != nil {
			t.Fatal(err)
		}
		if e := p.producers.Entry(pid); e == nil || e.CoordinatorEpoch != 6 {
			t.Fatalf("from %s: entry %+v, want coordinator epoch 6", from, e)
		}
		if _, err := deleteProducerSnapshots(p.log.Dir(), func(int64) bool { return true }); err != nil {
			t.Fatal(err)
		}
	}
}
