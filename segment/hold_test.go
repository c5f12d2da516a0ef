package segment

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// TestHoldOrCopyBoundsHolds: past the file cache's capacity in outstanding Holds, a
// range is copied instead of held, with the same bytes; a released Hold makes room
// again, and no more descriptors stay open than the cache's own plus its Holds.
func TestHoldOrCopyBoundsHolds(t *testing.T) {
	const logs = 4
	fc := NewFileCache(2)
	var ranges []FileRange
	var want [][]byte
	for i := range logs {
		l, _, err := Open(filepath.Join(t.TempDir(), fmt.Sprintf("t-%d", i)), smallConfig(), OpenOptions{Files: fc})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		want = append(want, bytes.Join(appendN(t, l, 1, batchSpec{records: 1, valueSize: 10, seed: byte(i)}, 0), nil))
		r, err := l.Read(0, 1<<20, l.LogEndOffset())
		if err != nil {
			t.Fatal(err)
		}
		ranges = append(ranges, r)
	}
	var holds []*Hold
	for i, r := range ranges {
		h, copied, err := r.HoldOrCopy()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case i < 2 && (h == nil || copied != nil):
			t.Fatalf("range %d: hold %v, %d bytes copied; want a Hold (the cache holds 2)", i, h, len(copied))
		case i >= 2 && (h != nil || !bytes.Equal(copied, want[i])):
			t.Fatalf("range %d: hold %v, copied %x; want the bytes %x", i, h, copied, want[i])
		}
		if h != nil {
			checkHeld(t, h, want[i])
			holds = append(holds, h)
		}
	}
	holds[0].Release()
	holds[0].Release() // idempotent: counted once
	l, _, err := Open(filepath.Join(t.TempDir(), "t-again"), smallConfig(), OpenOptions{Files: fc})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendN(t, l, 1, batchSpec{records: 1, valueSize: 10}, 0)
	r, err := l.Read(0, 1<<20, l.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	h, copied, err := r.HoldOrCopy()
	if err != nil || h == nil || copied != nil {
		t.Fatalf("after a release: hold %v, %d bytes copied, %v; want a Hold", h, len(copied), err)
	}
	h.Release()
	holds[1].Release()
	if n := fc.holds.Load(); n != 0 {
		t.Fatalf("%d Holds counted after every one was released", n)
	}
}
