package segment

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// countSyncs replaces syncFile for the test and returns the base names of the files
// fsynced since, in order.
func countSyncs(t *testing.T) *[]string {
	var names []string
	old := syncFile
	syncFile = func(f *os.File) error {
		names = append(names, filepath.Base(f.Name()))
		return old(f)
	}
	t.Cleanup(func() { syncFile = old })
	return &names
}

// groupCommit does what a partition's flusher does: fsync SyncTarget's files outside
// the log's calls, then MarkFlushed.
func groupCommit(t *testing.T, l *Log) {
	files, target := l.SyncTarget()
	for _, f := range files {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	l.MarkFlushed(target)
}

// A log whose records were all fsynced by group commit (fsync before the
// acknowledgement) closes without fsyncing its .log again, and fsyncs an index only
// when entries were written to it since its last fsync: a clean shutdown of many
// written replicas costs no fsync for those with nothing unsynced.
func TestCloseSyncsOnlyWhatIsUnsynced(t *testing.T) {
	cfg := smallConfig()
	cfg.FlushMs = 60_000 // flush.ms set: the maintenance pass would flush a due log
	l, dir := openTestLog(t, cfg, OpenOptions{})
	appendN(t, l, 1, batchSpec{records: 1, valueSize: 100}, 0) // below index.interval.bytes: no entry
	if !l.MaintenanceDue() {
		t.Fatal("an unflushed log with flush.ms set is not due")
	}
	groupCommit(t, l)
	if l.MaintenanceDue() {
		t.Fatal("a log whose every offset is on disk is still due for a flush")
	}
	syncs := countSyncs(t)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if len(*syncs) != 0 {
		t.Fatalf("flush and close of a log fsynced up to its end fsynced %v", *syncs)
	}

	// Enough bytes for index entries: the close fsyncs both indexes, not the .log.
	l, rep, err := Open(dir, cfg, OpenOptions{CleanShutdown: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.SegmentsRecovered != 0 {
		t.Fatalf("clean reopen recovered %d segments", rep.SegmentsRecovered)
	}
	appendN(t, l, 4, batchSpec{records: 4, valueSize: 600, baseTimestamp: 1000}, 0)
	groupCommit(t, l)
	*syncs = nil
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	want := []string{"00000000000000000000.index", "00000000000000000000.timeindex"}
	if got := *syncs; !slices.Equal(got, want) {
		t.Fatalf("close fsynced %v, want %v", got, want)
	}

	// An unclean open recovers the active segment and fsyncs it whole, once.
	*syncs = nil
	l, rep, err = Open(dir, cfg, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.SegmentsRecovered != 1 {
		t.Fatalf("unclean reopen recovered %d segments, want 1", rep.SegmentsRecovered)
	}
	want = []string{"00000000000000000000.log", "00000000000000000000.index", "00000000000000000000.timeindex"}
	if got := *syncs; !slices.Equal(got, want) {
		t.Fatalf("unclean open fsynced %v, want %v", got, want)
	}
	*syncs = nil
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if len(*syncs) != 0 {
		t.Fatalf("close after the recovery's fsync fsynced %v", *syncs)
	}
}

// A clean open closes its active segment's files again once loaded; scanning all of its
// batch headers (the producer state's replay) then reads the .log through a descriptor
// of its own and leaves the cache as it was, while a scan from inside the segment, which
// needs the offset index, opens it through the cache. Both see every header.
func TestScanOfAClosedSegmentOpensNoCacheEntry(t *testing.T) {
	cfg := smallConfig()
	fc := NewFileCache(8)
	l, dir := openTestLog(t, cfg, OpenOptions{Files: fc})
	appendN(t, l, 6, batchSpec{records: 2, valueSize: 700}, 0)
	l, _ = reopen(t, l, dir, cfg, OpenOptions{Files: fc, CleanShutdown: true})
	before := fc.Stats()
	var firsts []int64
	collect := func(h BatchHeader) error { firsts = append(firsts, h.BaseOffset); return nil }
	if err := l.ScanBatchHeaders(0, collect); err != nil {
		t.Fatal(err)
	}
	if want := []int64{0, 2, 4, 6, 8, 10}; !slices.Equal(firsts, want) {
		t.Fatalf("scan from 0 read batches at %v, want %v", firsts, want)
	}
	if after := fc.Stats(); after.Opens != before.Opens || after.Open != before.Open {
		t.Fatalf("a scan of a closed segment from its start opened it in the cache: %+v, before %+v", after, before)
	}
	firsts = nil
	if err := l.ScanBatchHeaders(7, collect); err != nil {
		t.Fatal(err)
	}
	if want := []int64{6, 8, 10}; !slices.Equal(firsts, want) {
		t.Fatalf("scan from 7 read batches at %v, want %v", firsts, want)
	}
	if after := fc.Stats(); after.Opens != before.Opens+1 {
		t.Fatalf("a scan from inside the segment: cache %+v, before %+v; want one open", after, before)
	}
}
