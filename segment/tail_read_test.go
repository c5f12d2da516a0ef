package segment

import (
	"bytes"
	"testing"
)

// A read of the log's last batch — a follower fetching what was just appended — is
// answered from the remembered tail without reading a header, and gives the same
// bytes as a read that scans: after appends, after a truncation that removed the
// remembered batch, after different batches appended in its place, and after a reopen.
func TestTailReadFromMemory(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 1 << 20 // one segment
	l, dir := openTestLog(t, cfg, OpenOptions{})
	headerReads := 0
	testHookHeaderRead = func() { headerReads++ }
	t.Cleanup(func() { testHookHeaderRead = nil })
	check := func(l *Log, stored [][]byte, wantNoHeaderReads bool) {
		t.Helper()
		last := stored[len(stored)-1]
		base := l.LogEndOffset() - int64(lastOffsetDelta(last)) - 1
		for off := base; off < l.LogEndOffset(); off++ {
			headerReads = 0
			r, err := l.Read(off, 1<<20, l.LogEndOffset())
			if err != nil {
				t.Fatal(err)
			}
			b, err := r.Bytes()
			r.Release()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, last) {
				t.Fatalf("Read(%d) at the tail: %d bytes [%d, %d], want the last batch (%d bytes)", off, len(b), r.FirstOffset, r.LastOffset, len(last))
			}
			if wantNoHeaderReads && headerReads != 0 {
				t.Fatalf("Read(%d) at the tail read %d headers, want none", off, headerReads)
			}
		}
		if got := readAll(t, l); len(got) != len(stored) || !bytes.Equal(got[len(got)-1], last) {
			t.Fatalf("read %d batches back, want %d", len(got), len(stored))
		}
	}
	stored := appendN(t, l, 40, batchSpec{records: 3, valueSize: 100}, 0)
	check(l, stored, true)
	// Truncate into the middle: the remembered batch is gone; the tail is an older one.
	if _, err := l.TruncateTo(60); err != nil {
		t.Fatal(err)
	}
	stored = stored[:20]
	check(l, stored, false)
	// Different batches where the old ones were.
	stored = append(stored, appendN(t, l, 5, batchSpec{records: 2, valueSize: 333, seed: 9}, 1)...)
	check(l, stored, true)
	l, _ = reopen(t, l, dir, cfg, OpenOptions{})
	check(l, stored, false)
	stored = append(stored, appendN(t, l, 1, batchSpec{records: 4, valueSize: 50}, 1)...)
	check(l, stored, true)
}

// lastOffsetDelta is a stored batch's last offset delta.
func lastOffsetDelta(b []byte) int32 {
	h, _ := ParseBatchHeader(b)
	return h.LastOffsetDelta
}
