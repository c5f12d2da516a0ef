package segment

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// openAbsent opens a log whose partition directory does not exist, as the broker does
// for a new replica.
func openAbsent(t *testing.T) (*Log, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "t-0")
	l, _, err := Open(dir, smallConfig(), OpenOptions{Files: NewFileCache(4), DirAbsent: true})
	if err != nil {
		t.Fatal(err)
	}
	return l, dir
}

// TestAbsentDirMadeByEveryFirstWrite: each kind of first write into a log that has no
// directory yet makes it, and what it wrote is there after a reopen.
func TestAbsentDirMadeByEveryFirstWrite(t *testing.T) {
	t.Run("leader epoch checkpoint", func(t *testing.T) {
		l, dir := openAbsent(t)
		if err := l.LeaderEpochs().Assign(3, 0); err != nil {
			t.Fatal(err)
		}
		lines, err := ReadCheckpoint(filepath.Join(dir, LeaderEpochCheckpointFile))
		if err != nil || len(lines) != 1 || lines[0] != "3 0" {
			t.Fatalf("leader-epoch-checkpoint after an Assign: %q, %v; want [\"3 0\"]", lines, err)
		}
		l.Close()
	})
	t.Run("full truncation", func(t *testing.T) {
		l, dir := openAbsent(t)
		if err := l.TruncateFullyAndStartAt(500); err != nil {
			t.Fatal(err)
		}
		if !fileExists(segmentPath(dir, 500, LogFileSuffix)) {
			t.Fatal("no segment at 500 after the truncation")
		}
		appendN(t, l, 3, batchSpec{records: 1, valueSize: 10}, 0)
		l, _ = reopen(t, l, dir, smallConfig(), OpenOptions{Files: NewFileCache(4), CleanShutdown: true})
		defer l.Close()
		if l.LogStartOffset() != 500 || l.LogEndOffset() != 503 {
			t.Fatalf("offsets [%d, %d), want [500, 503)", l.LogStartOffset(), l.LogEndOffset())
		}
	})
	t.Run("append with a birth file", func(t *testing.T) {
		l, dir := openAbsent(t)
		if err := l.WriteMetadataFile(&DirFile{Name: "partition.metadata", Data: []byte("version: 0\n")}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("the birth file made the directory before the first record: %v", err)
		}
		written := appendN(t, l, 2, batchSpec{records: 1, valueSize: 10}, 0)
		if !fileExists(filepath.Join(dir, "partition.metadata")) {
			t.Fatal("no partition.metadata after the first append")
		}
		l, _ = reopen(t, l, dir, smallConfig(), OpenOptions{Files: NewFileCache(4)})
		defer l.Close()
		if got := readAll(t, l); len(got) != len(written) {
			t.Fatalf("read %d batches after reopen, want %d", len(got), len(written))
		}
	})
}

// TestAbsentDirMarkForDeletion: a log that never made its directory has nothing to
// rename; one that did is renamed whole.
func TestAbsentDirMarkForDeletion(t *testing.T) {
	l, dir := openAbsent(t)
	to, err := l.MarkForDeletion("a")
	if err != nil || to != "" {
		t.Fatalf("MarkForDeletion of a log without a directory: %q, %v; want \"\", nil", to, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the deletion made the directory: %v", err)
	}
	l, dir = openAbsent(t)
	appendN(t, l, 1, batchSpec{records: 1, valueSize: 10}, 0)
	to, err = l.MarkForDeletion("b")
	if err != nil || !fileExists(segmentPath(to, 0, LogFileSuffix)) {
		t.Fatalf("MarkForDeletion after an append: %q, %v; want the renamed directory with its segment", to, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the directory is still there after its rename: %v", err)
	}
}
