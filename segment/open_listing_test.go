package segment

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestOpenListing: Open hands its owner the directory's other files once (here a
// producer snapshot and partition.metadata, not the segment files), and not after a
// write, which may change the directory. A log with no .txnindex file reads no aborted
// transactions.
func TestOpenListing(t *testing.T) {
	dir := t.TempDir()
	l, _, err := Open(dir, smallConfig(), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 3, batchSpec{records: 2}, 0)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"00000000000000000006.snapshot", "partition.metadata"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, _, err = Open(dir, smallConfig(), OpenOptions{CleanShutdown: true, Files: NewFileCache(4)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got, err := l.AbortedTxns(); err != nil || len(got) != 0 {
		t.Fatalf("aborted transactions of a log without .txnindex: %v, %v", got, err)
	}
	names, ok := l.TakeOpenListing()
	slices.Sort(names)
	if !ok || !slices.Contains(names, "00000000000000000006.snapshot") || !slices.Contains(names, "partition.metadata") || slices.ContainsFunc(names, func(n string) bool {
		_, suffix, isSeg := parseSegmentFileName(n)
		return isSeg && (suffix == LogFileSuffix || suffix == IndexFileSuffix || suffix == TimeIndexFileSuffix)
	}) {
		t.Fatalf("listing %v (ok %v)", names, ok)
	}
	if _, ok := l.TakeOpenListing(); ok {
		t.Fatal("the listing was handed out twice")
	}
	l.Close()
	l, _, err = Open(dir, smallConfig(), OpenOptions{CleanShutdown: true, Files: NewFileCache(4)})
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 1, batchSpec{records: 1}, 0)
	if _, ok := l.TakeOpenListing(); ok {
		t.Fatal("the listing was handed out after a write")
	}
}
