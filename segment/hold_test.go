package segment

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

// TestHoldOutlivesSegmentRemoval holds ranges of the first segment and of the active
// one, then removes them every way a log can (AdvanceLogStartOffset, Close, Delete):
// the held bytes stay readable, and each file closes with its last Release.
func TestHoldOutlivesSegmentRemoval(t *testing.T) {
	cfg := smallConfig()
	l, dir := openTestLog(t, cfg, OpenOptions{})
	appendN(t, l, 200, batchSpec{records: 10, valueSize: 100, baseTimestamp: 1000, tsStep: 1}, 1)
	if len(l.Segments()) < 3 {
		t.Fatalf("expected rolls, have %d segments", len(l.Segments()))
	}
	first, err := l.Read(0, 1<<20, l.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	wantFirst, _ := first.Bytes()
	hFirst := first.Hold()
	last, err := l.Read(l.LogEndOffset()-10, 1<<20, l.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	wantLast, _ := last.Bytes()
	hLast := last.Hold()
	if hFirst == nil || hLast == nil || hFirst.Len() == 0 {
		t.Fatal("no hold on a non-empty range")
	}

	// Retention-style removal of the first segment: its file is unlinked, not closed.
	if err := l.AdvanceLogStartOffset(first.LastOffset + 1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(first.File.Name()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("first segment still on disk: %v", err)
	}
	checkHeld(t, hFirst, wantFirst)

	// The whole log closed and deleted: the active segment's range still reads.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	checkHeld(t, hLast, wantLast)

	for _, h := range []*Hold{hFirst, hLast} {
		h.Release()
		h.Release() // idempotent
		if _, err := h.File.ReadAt(make([]byte, 1), h.Position); !errors.Is(err, os.ErrClosed) {
			t.Fatalf("file open after the last release: %v", err)
		}
	}
	var none *Hold
	none.Release()
	if none.Len() != 0 || (FileRange{}).Hold() != nil {
		t.Fatal("empty holds are nil")
	}
}

// TestHoldKeepsOpenSegmentFile: a released hold does not close a file its segment
// still uses.
func TestHoldKeepsOpenSegmentFile(t *testing.T) {
	l, _ := openTestLog(t, smallConfig(), OpenOptions{})
	want := appendN(t, l, 3, batchSpec{records: 2, valueSize: 10, baseTimestamp: 1, tsStep: 1}, 1)
	r, err := l.Read(0, 1<<20, l.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	r.Hold().Release()
	got := readAll(t, l)
	if len(got) != len(want) || !bytes.Equal(got[0], want[0]) {
		t.Fatal("log unreadable after a hold was released")
	}
}

func checkHeld(t *testing.T, h *Hold, want []byte) {
	t.Helper()
	got := make([]byte, h.Size)
	if _, err := h.File.ReadAt(got, h.Position); err != nil {
		t.Fatalf("held range unreadable: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("held range changed")
	}
}
