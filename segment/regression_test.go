package segment

import (
	"os"
	"testing"
)

// Truncating exactly at a segment's end makes that closed segment active again: its
// indexes must become writable for the appends that follow.
func TestTruncateAtSegmentEndThenAppend(t *testing.T) {
	cfg := smallConfig()
	cfg.IndexIntervalBytes = 0 // an index entry for every batch
	l, dir := openTestLog(t, cfg, OpenOptions{})
	appendN(t, l, 3, batchSpec{records: 2, valueSize: 50}, 1)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 3, batchSpec{records: 2, valueSize: 50}, 1)
	if leo, err := l.TruncateTo(6); err != nil || leo != 6 || len(l.Segments()) != 1 {
		t.Fatalf("truncate: leo %d err %v segments %+v", leo, err, l.Segments())
	}
	appendN(t, l, 5, batchSpec{records: 2, valueSize: 50}, 2)
	l2, rep := reopen(t, l, dir, cfg, OpenOptions{})
	if rep.Cut != nil || l2.LogEndOffset() != 16 || len(readAll(t, l2)) != 8 {
		t.Fatalf("after reopen: cut %+v LEO %d", rep.Cut, l2.LogEndOffset())
	}
}

// One call with more batches than the index has room for must not overflow it.
func TestManyBatchesInOneCallWithASmallIndex(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentIndexBytes = 4 * offsetIndexEntrySize
	cfg.IndexIntervalBytes = 0
	l, dir := openTestLog(t, cfg, OpenOptions{})
	var buf []byte
	for i := 0; i < 20; i++ {
		buf = append(buf, makeBatch(t, batchSpec{records: 1, valueSize: 10, baseTimestamp: int64(i)})...)
	}
	if _, err := l.AppendAsLeader(buf, 0); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 3, batchSpec{records: 1, valueSize: 10, baseTimestamp: 100}, 0)
	l2, rep := reopen(t, l, dir, cfg, OpenOptions{})
	if rep.Cut != nil || l2.LogEndOffset() != 23 || len(readAll(t, l2)) != 23 {
		t.Fatalf("after reopen: cut %+v LEO %d", rep.Cut, l2.LogEndOffset())
	}
}

// An active segment of an older build (or copied while open) has preallocated,
// zero-tailed indexes. Loaded as trusted, its largest timestamp must come from real
// entries, not the zero tail, and the tail is cut off the files. The largest timestamp
// is in the first batch, so only the time index knows it.
func TestTrustedLoadOfUntrimmedIndexes(t *testing.T) {
	cfg := smallConfig()
	cfg.IndexIntervalBytes = 100
	l, dir := openTestLog(t, cfg, OpenOptions{})
	for i := 0; i < 10; i++ {
		appendN(t, l, 1, batchSpec{records: 2, valueSize: 80, baseTimestamp: 5000 - int64(i)*10, tsStep: 1}, 1)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	copyDir := t.TempDir()
	for _, suffix := range []string{LogFileSuffix, IndexFileSuffix, TimeIndexFileSuffix} {
		data, err := os.ReadFile(segmentPath(dir, 0, suffix))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(segmentPath(copyDir, 0, suffix), data, 0o644); err != nil {
			t.Fatal(err)
		}
		entrySize := map[string]int{IndexFileSuffix: offsetIndexEntrySize, TimeIndexFileSuffix: timeIndexEntrySize}[suffix]
		if suffix != LogFileSuffix { // preallocated as older builds did (a sparse zero tail)
			if err := os.Truncate(segmentPath(copyDir, 0, suffix), int64(cfg.SegmentIndexBytes/entrySize*entrySize)); err != nil {
				t.Fatal(err)
			}
		}
	}
	l2, rep, err := Open(copyDir, cfg, OpenOptions{CleanShutdown: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if rep.SegmentsRecovered != 0 || l2.LogEndOffset() != 20 {
		t.Fatalf("report %+v, LEO %d", rep, l2.LogEndOffset())
	}
	for _, ix := range []*indexFile{l2.segments[0].offsetIndex.indexFile, l2.segments[0].timeIndex.indexFile} {
		if st, err := os.Stat(ix.filePath()); err != nil || st.Size() != int64(ix.entries*ix.entrySize) {
			t.Fatalf("%s after the open: %v, %d entries: the zero tail is not cut off", ix.filePath(), err, ix.entries)
		}
	}
	if got := l2.Segments()[0].MaxTimestamp; got != 5001 {
		t.Fatalf("max timestamp %d, want 5001", got)
	}
	if ts, ok, _ := l2.MaxTimestampOffset(); !ok || ts != (TimestampOffset{1, 5001}) {
		t.Fatalf("MaxTimestampOffset %+v", ts)
	}
}
