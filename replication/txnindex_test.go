package replication

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/petrel-broker/petrel/segment"
)

// Committed and aborted transactions over several segments: the aborted ones are in the
// .txnindex of their marker's segment, read_committed fetches across sealed segments get
// them, and after a crash that lost the active segment's index (or with a corrupt
// sealed one) a reopened partition has the same aborted list, LSO and producer state,
// with the index files rebuilt.
func TestTxnIndexRecoveredAfterCrash(t *testing.T) {
	cfg := segment.DefaultConfig()
	cfg.SegmentBytes = 300 // a few batches per segment
	p, dir := newLeader(t, cfg)
	app := func(b []byte) segment.AppendInfo {
		t.Helper()
		info, err := p.AppendAsLeader(b, 0)
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	seq := map[int64]int32{}
	txn := func(pid int64, n int) {
		app(transactionalBatch(n, pid, 0, seq[pid]))
		seq[pid] += int32(n)
	}
	for round := 0; round < 4; round++ {
		app(batch(1))
		txn(5, 2) // aborted
		txn(6, 1) // committed
		app(markerBatch(6, 0, true))
		txn(6, 1)
		app(markerBatch(5, 0, false))
		app(markerBatch(6, 0, false)) // aborted while producer 5's is over
	}
	txn(9, 1) // left open
	txn(5, 1)
	last := app(markerBatch(5, 0, false))
	if last.SegmentBaseOffset != p.log.ActiveSegmentBaseOffset() || len(p.log.Segments()) < 4 {
		t.Fatalf("want the last abort in the active segment of several: %+v, %d segments", last, len(p.log.Segments()))
	}
	wantAll, wantLSO, wantEntries := p.producers.Aborted(), p.State().LastStableOffset, p.producers.Entries()
	if len(wantAll) != 9 {
		t.Fatalf("%d aborted transactions: %+v", len(wantAll), wantAll)
	}
	indexed, err := p.log.AbortedTxns()
	if err != nil || !slices.Equal(indexed, wantAll) {
		t.Fatalf("indexed %+v (%v), want %+v", indexed, err, wantAll)
	}

	// read_committed across sealed segments, from the start and from the middle.
	check := func(p *Partition, what string) {
		t.Helper()
		for _, from := range []int64{0, wantAll[3].FirstOffset + 1} {
			res, err := p.ReadIsolated(from, 1<<20, -1, LeaderOnly, true)
			if err != nil {
				t.Fatal(err)
			}
			var want []AbortedTxn
			for _, a := range wantAll {
				if a.LastOffset >= from && a.FirstOffset < res.LastStableOffset {
					want = append(want, a)
				}
			}
			if !slices.Equal(res.Aborted, want) || len(want) == 0 {
				t.Fatalf("%s: read_committed from %d: aborted %+v, want %+v", what, from, res.Aborted, want)
			}
		}
	}
	check(p, "before the crash")

	activeIndex := filepath.Join(dir, segmentFile(p.log.ActiveSegmentBaseOffset(), segment.TxnIndexFileSuffix))
	activeBytes, err := os.ReadFile(activeIndex)
	if err != nil {
		t.Fatal(err)
	}
	var sealed int64 = -1 // the segment of the first abort marker, sealed
	for _, si := range p.log.Segments() {
		if si.BaseOffset <= wantAll[0].LastOffset && wantAll[0].LastOffset < si.NextOffset {
			sealed = si.BaseOffset
		}
	}
	if sealed < 0 || sealed == p.log.ActiveSegmentBaseOffset() {
		t.Fatalf("the first abort at %d is not in a sealed segment", wantAll[0].LastOffset)
	}
	firstIndex := filepath.Join(dir, segmentFile(sealed, segment.TxnIndexFileSuffix))
	firstBytes, err := os.ReadFile(firstIndex)
	if err != nil {
		t.Fatal(err)
	}
	hw := p.State().HighWatermark
	for _, crash := range []struct {
		name   string
		damage func() error
	}{
		{"active index lost", func() error { return os.Remove(activeIndex) }},
		{"active index torn", func() error { return os.Truncate(activeIndex, int64(len(activeBytes))-10) }},
		{"sealed index of an unknown version", func() error {
			bad := slices.Clone(firstBytes)
			bad[1] = 1
			return os.WriteFile(firstIndex, bad, 0o644)
		}},
	} {
		if err := crash.damage(); err != nil {
			t.Fatal(err)
		}
		// The first partition is never closed: no shutdown snapshot, as after kill -9.
		log, _, err := segment.Open(dir, cfg, segment.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		q := NewPartition("t", 0, log, hw, Options{BrokerID: 0})
		if _, err := q.LoadProducerState(0, 0); err != nil {
			t.Fatal(err)
		}
		if err := q.BecomeLeaderOf(0, 0, []int32{0}, []int32{0}); err != nil {
			t.Fatal(err)
		}
		if got := q.producers.Aborted(); !slices.Equal(got, wantAll) {
			t.Fatalf("%s: aborted\n%+v\nwant\n%+v", crash.name, got, wantAll)
		}
		if got := q.State().LastStableOffset; got != wantLSO {
			t.Fatalf("%s: LSO %d, want %d", crash.name, got, wantLSO)
		}
		if got := q.producers.Entries(); !slices.EqualFunc(got, wantEntries, func(a, b ProducerEntry) bool {
			return entriesEqual(a, b) && a.TxnOpen == b.TxnOpen && a.TxnFirstOffset == b.TxnFirstOffset
		}) {
			t.Fatalf("%s: entries\n%+v\nwant\n%+v", crash.name, got, wantEntries)
		}
		check(q, crash.name)
		for path, want := range map[string][]byte{activeIndex: activeBytes, firstIndex: firstBytes} {
			if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: %s not rebuilt: %x (%v), want %x", crash.name, filepath.Base(path), got, err, want)
			}
		}
		if err := q.Stop(false); err != nil {
			t.Fatal(err)
		}
		// Stop wrote a shutdown snapshot at the log end: the next round is a crash again.
		if _, err := deleteProducerSnapshots(dir, func(off int64) bool { return off == last.LastOffset+1 }); err != nil {
			t.Fatal(err)
		}
	}
}

// segmentFile is Kafka's segment file name: the base offset in 20 digits.
func segmentFile(base int64, suffix string) string { return fmt.Sprintf("%020d%s", base, suffix) }
