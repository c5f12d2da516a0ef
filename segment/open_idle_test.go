package segment

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// indexFileSizes returns the sizes of segment base's .index and .timeindex in dir (-1
// when missing).
func indexFileSizes(t *testing.T, dir string, base int64) (int64, int64) {
	t.Helper()
	size := func(suffix string) int64 {
		st, err := os.Stat(segmentPath(dir, base, suffix))
		if err != nil {
			return -1
		}
		return st.Size()
	}
	return size(IndexFileSuffix), size(TimeIndexFileSuffix)
}

// TestCleanOpenOfIdleLogOpensNoFiles: a new log and an empty log reopened after a clean
// close keep no segment file open (the new one has no index files until its first
// append, so its close trims nothing), and the clean reopen does not even open (let alone
// scan) its segment; the first append opens it, and everything appended reads back.
// After a crash the same log is opened and its active segment recovered.
func TestCleanOpenOfIdleLogOpensNoFiles(t *testing.T) {
	cfg := smallConfig()
	fc := NewFileCache(8)
	dir := t.TempDir()
	l, rep, err := Open(dir, cfg, OpenOptions{Files: fc})
	if err != nil {
		t.Fatal(err)
	}
	if st := fc.Stats(); st.Open != 0 {
		t.Fatalf("a new, idle log keeps %d segments open", st.Open)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// A new log never written to has created no segment file (unbornSegment).
	if oi, ti := indexFileSizes(t, dir, 0); oi != -1 || ti != -1 || fileExists(segmentPath(dir, 0, LogFileSuffix)) {
		t.Fatalf("a new log closed unwritten left segment files (indexes of %d and %d bytes)", oi, ti)
	}

	l, rep, err = Open(dir, cfg, OpenOptions{Files: fc, CleanShutdown: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.SegmentsOpened != 0 || rep.SegmentsRecovered != 0 || len(rep.IndexesRebuilt) != 0 {
		t.Fatalf("clean open of an empty log: %+v, want no segment opened or recovered", rep)
	}
	if st := fc.Stats(); st.Open != 0 {
		t.Fatalf("%d segments open after a clean open", st.Open)
	}
	if l.LogEndOffset() != 0 || l.LogStartOffset() != 0 {
		t.Fatalf("offsets [%d, %d), want [0, 0)", l.LogStartOffset(), l.LogEndOffset())
	}
	written := appendN(t, l, 20, batchSpec{records: 3, valueSize: 300, baseTimestamp: 7000, tsStep: 5}, 2)
	if got := readAll(t, l); len(got) != len(written) {
		t.Fatalf("read %d batches, wrote %d", len(got), len(written))
	}
	end := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// A clean reopen of the non-empty log loads the active segment from its indexes.
	l, rep, err = Open(dir, cfg, OpenOptions{Files: fc, CleanShutdown: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.SegmentsRecovered != 0 || l.LogEndOffset() != end {
		t.Fatalf("clean reopen: %+v, end %d, want nothing recovered, end %d", rep, l.LogEndOffset(), end)
	}
	got := readAll(t, l)
	for i := range written {
		if !bytes.Equal(got[i], written[i]) {
			t.Fatalf("batch %d differs after the clean reopen", i)
		}
	}
	l.closeFiles() // a crash: no flush, no trim

	l, rep, err = Open(dir, cfg, OpenOptions{Files: fc})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if rep.SegmentsOpened == 0 || rep.SegmentsRecovered == 0 || l.LogEndOffset() != end {
		t.Fatalf("open after a crash: %+v, end %d, want the active segment opened and recovered, end %d", rep, l.LogEndOffset(), end)
	}
	if st := fc.Stats(); st.Open != 0 {
		t.Fatalf("%d segments left open after recovery", st.Open)
	}
}

// TestCleanOpenEmptyLogThenCrash: the lazily opened empty segment of a clean open takes
// appends (its indexes mapped on first use, written with pwrite), and a crash after them
// recovers every batch.
func TestCleanOpenEmptyLogThenCrash(t *testing.T) {
	cfg := smallConfig()
	fc := NewFileCache(2)
	l, dir := openTestLog(t, cfg, OpenOptions{Files: fc})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, _, err := Open(dir, cfg, OpenOptions{Files: fc, CleanShutdown: true})
	if err != nil {
		t.Fatal(err)
	}
	written := appendN(t, l, 40, batchSpec{records: 2, valueSize: 500, baseTimestamp: 100, tsStep: 1}, 0)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if oi, _ := indexFileSizes(t, dir, 0); oi <= 0 || oi >= int64(cfg.SegmentIndexBytes) || oi%offsetIndexEntrySize != 0 {
		t.Fatalf("active offset index of %d bytes, want its entries only (never preallocated to %d)", oi, cfg.SegmentIndexBytes)
	}
	end := l.LogEndOffset()
	l.closeFiles() // a crash
	l, rep, err := Open(dir, cfg, OpenOptions{Files: fc})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if rep.Cut != nil || l.LogEndOffset() != end {
		t.Fatalf("after the crash: end %d (cut %+v), want %d", l.LogEndOffset(), rep.Cut, end)
	}
	got := readAll(t, l)
	if len(got) != len(written) {
		t.Fatalf("read %d batches, wrote %d", len(got), len(written))
	}
	for i := range written {
		if !bytes.Equal(got[i], written[i]) {
			t.Fatalf("batch %d differs after recovery", i)
		}
	}
}

// TestOpenTrimsEpochsBeforeNextAppend: the leader epochs that an open removes (they start
// at or after the log end) stay in the file until the next append rewrites it before
// writing, so a crash after that append cannot leave an epoch claiming its records.
func TestOpenTrimsEpochsBeforeNextAppend(t *testing.T) {
	cfg := epochTestConfig()
	l, dir := openTestLog(t, cfg, OpenOptions{})
	appendEpochs(t, l, 1, 1)
	end := l.LogEndOffset()
	if err := l.LeaderEpochs().Assign(5, end); err != nil { // led in epoch 5, wrote nothing
		t.Fatal(err)
	}
	l, _ = reopen(t, l, dir, cfg, OpenOptions{CleanShutdown: true})
	if got := l.LeaderEpochs().Entries(); len(got) != 1 || got[0] != (EpochEntry{1, 0}) {
		t.Fatalf("entries after reopen %v, want [{1 0}]", got)
	}
	appendEpochs(t, l, 1) // epoch 1 again (a follower of the old leader): no Assign
	checkEpochs(t, "after the append", l.LeaderEpochs(), dir, []EpochEntry{{1, 0}})
}

// TestNewLogCreatesSegmentFilesOnFirstAppend: opening a new log creates neither its
// directory nor a segment file, nor does closing and reopening it; the first append
// creates the directory and the active segment's .log and indexes, and the batches
// survive a crash right after the flush.
func TestNewLogCreatesSegmentFilesOnFirstAppend(t *testing.T) {
	cfg := smallConfig()
	fc := NewFileCache(4)
	dir := filepath.Join(t.TempDir(), "t-0")
	l, _, err := Open(dir, cfg, OpenOptions{Files: fc})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l, _, err = Open(dir, cfg, OpenOptions{Files: fc, CleanShutdown: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a new log made its directory before its first write: %v", err)
	}
	written := appendN(t, l, 10, batchSpec{records: 2, valueSize: 100, baseTimestamp: 50, tsStep: 1}, 0)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if oi, ti := indexFileSizes(t, dir, 0); oi <= 0 || ti <= 0 || !fileExists(segmentPath(dir, 0, LogFileSuffix)) {
		t.Fatalf("after the first append: indexes of %d and %d bytes, .log exists %v", oi, ti, fileExists(segmentPath(dir, 0, LogFileSuffix)))
	}
	end := l.LogEndOffset()
	l.closeFiles() // a crash
	l, rep, err := Open(dir, cfg, OpenOptions{Files: fc})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.LogEndOffset() != end || rep.Cut != nil || len(readAll(t, l)) != len(written) {
		t.Fatalf("after the crash: end %d (want %d), cut %+v", l.LogEndOffset(), end, rep.Cut)
	}
}

// TestNewLogTruncateFullyBeforeFirstAppend: a new follower whose leader's log starts
// past zero starts its empty log there (the unborn segment has no file to remove), and
// takes appends from that offset.
func TestNewLogTruncateFullyBeforeFirstAppend(t *testing.T) {
	cfg := smallConfig()
	fc := NewFileCache(4)
	dir := t.TempDir()
	l, _, err := Open(dir, cfg, OpenOptions{Files: fc})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.TruncateFullyAndStartAt(500); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 500 || l.LogEndOffset() != 500 {
		t.Fatalf("offsets [%d, %d), want [500, 500)", l.LogStartOffset(), l.LogEndOffset())
	}
	if _, err := l.TruncateTo(500); err != nil {
		t.Fatal(err)
	}
}
