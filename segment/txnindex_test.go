package segment

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzTxnIndex: any bytes decode without a panic; whole entries round-trip, a torn last
// entry is dropped, and an unknown version is ErrCorruptTxnIndex.
func FuzzTxnIndex(f *testing.F) {
	f.Add(AppendTxnIndexEntry(nil, AbortedTxn{ProducerID: 7, FirstOffset: 3, LastOffset: 9, LastStableOffset: 10}))
	f.Add(AppendTxnIndexEntry(nil, AbortedTxn{ProducerID: 1, FirstOffset: 0, LastOffset: 1, LastStableOffset: 2})[:20])
	f.Add([]byte{0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := ParseTxnIndex(b)
		if err != nil {
			if !errors.Is(err, ErrCorruptTxnIndex) {
				t.Fatalf("error %v is not ErrCorruptTxnIndex", err)
			}
			return
		}
		if len(entries) != len(b)/TxnIndexEntrySize {
			t.Fatalf("%d entries from %d bytes", len(entries), len(b))
		}
		var again []byte
		for _, a := range entries {
			again = AppendTxnIndexEntry(again, a)
		}
		if !bytes.Equal(again, b[:len(entries)*TxnIndexEntrySize]) {
			t.Fatal("entries do not re-encode to the same bytes")
		}
	})
}

// The .txnindex of a log: entries land in the segment of their marker, in Kafka's
// 34-byte format; they are truncated with the log, a torn last entry is dropped, and
// retention deletes the file with its segment.
func TestTxnIndexFollowsItsSegment(t *testing.T) {
	spec := batchSpec{records: 2, valueSize: 100}
	cfg := smallConfig()
	cfg.SegmentBytes = 2 * int64(len(makeBatch(t, spec))) // two batches (4 offsets) per segment
	l, dir := openTestLog(t, cfg, OpenOptions{})
	appendN(t, l, 8, spec, 0) // segments at 0, 4, 8, 12
	if n := len(l.Segments()); n != 4 {
		t.Fatalf("%d segments", n)
	}
	a1 := AbortedTxn{ProducerID: 5, FirstOffset: 0, LastOffset: 2, LastStableOffset: 3}
	a2 := AbortedTxn{ProducerID: 6, FirstOffset: 1, LastOffset: 5, LastStableOffset: 6}
	a3 := AbortedTxn{ProducerID: 7, FirstOffset: 9, LastOffset: 13, LastStableOffset: 14}
	a4 := AbortedTxn{ProducerID: 8, FirstOffset: 14, LastOffset: 15, LastStableOffset: 16}
	if err := l.AppendAbortedTxns([]AbortedTxn{a1, a2}); err != nil {
		t.Fatal(err)
	}
	if err := l.AppendAbortedTxns([]AbortedTxn{a3, a4}); err != nil {
		t.Fatal(err)
	}
	size := func(base int64) int64 {
		st, err := os.Stat(segmentPath(dir, base, TxnIndexFileSuffix))
		if errors.Is(err, os.ErrNotExist) {
			return -1
		}
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	for base, want := range map[int64]int64{0: 34, 4: 34, 8: -1, 12: 68} {
		if got := size(base); got != want {
			t.Fatalf("segment %d: .txnindex of %d bytes, want %d (-1: none)", base, got, want)
		}
	}
	b, err := os.ReadFile(segmentPath(dir, 12, TxnIndexFileSuffix))
	if err != nil {
		t.Fatal(err)
	}
	if want := AppendTxnIndexEntry(AppendTxnIndexEntry(nil, a3), a4); !bytes.Equal(b, want) {
		t.Fatalf("file bytes %x, want %x", b, want)
	}
	check := func(what string, want ...AbortedTxn) {
		t.Helper()
		got, err := l.AbortedTxns()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: %+v, want %+v", what, got, want)
		}
	}
	check("written", a1, a2, a3, a4)

	// A torn last entry (a crash mid-write) is dropped; the next append stays aligned.
	if err := os.Truncate(segmentPath(dir, 12, TxnIndexFileSuffix), 34+20); err != nil {
		t.Fatal(err)
	}
	check("torn", a1, a2, a3)
	if err := l.AppendAbortedTxns([]AbortedTxn{a4}); err != nil {
		t.Fatal(err)
	}
	check("appended after the torn entry", a1, a2, a3, a4)

	// Truncation drops the entries of the markers cut away.
	if _, err := l.TruncateTo(14); err != nil {
		t.Fatal(err)
	}
	check("truncated to 14", a1, a2, a3)
	if _, err := l.TruncateTo(10); err != nil {
		t.Fatal(err)
	}
	check("truncated to 10", a1, a2)
	if got := size(12); got != -1 {
		t.Fatalf("the removed segment's .txnindex is still there (%d bytes)", got)
	}

	// Retention deletes the .txnindex with its segment.
	if err := l.AdvanceLogStartOffset(8); err != nil {
		t.Fatal(err)
	}
	if _, err := l.EnforceRetention(math.MaxInt64); err != nil {
		t.Fatal(err)
	}
	if got, got4 := size(0), size(4); got != -1 || got4 != -1 {
		t.Fatalf("deleted segments' .txnindex files remain: %d, %d bytes", got, got4)
	}
	check("after retention")

	// A version other than 0 is reported, never decoded.
	bad := AppendTxnIndexEntry(nil, a3)
	bad[1] = 1
	if err := os.WriteFile(segmentPath(dir, 8, TxnIndexFileSuffix), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AbortedTxns(); !errors.Is(err, ErrCorruptTxnIndex) {
		t.Fatalf("version 1 entry: %v", err)
	}
}

// An orphan .txnindex (its .log gone) is removed when the log opens.
func TestTxnIndexOrphanRemovedOnOpen(t *testing.T) {
	l, dir := openTestLog(t, smallConfig(), OpenOptions{})
	appendN(t, l, 1, batchSpec{records: 1, valueSize: 10}, 0)
	orphan := segmentPath(dir, 100, TxnIndexFileSuffix)
	if err := os.WriteFile(orphan, AppendTxnIndexEntry(nil, AbortedTxn{ProducerID: 1, LastOffset: 100}), 0o644); err != nil {
		t.Fatal(err)
	}
	reopen(t, l, dir, smallConfig(), OpenOptions{})
	if _, err := os.Stat(orphan); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("orphan .txnindex kept: %v", err)
	}
}

// Compaction keeps every aborted transaction (their batches and markers are copied
// whole): the cleaned segment's .txnindex is the union of its group's, and a crash at
// any step of the swap leaves the same list on reopen.
func TestTxnIndexThroughCompactionSwap(t *testing.T) {
	cfg := smallConfig()
	cfg.Compacted = true
	build := func(t *testing.T) (*Log, string, []AbortedTxn) {
		dir := t.TempDir()
		l, _, err := Open(dir, cfg, OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var aborted []AbortedTxn
		for i := 0; i < 6; i++ {
			if i > 0 {
				l.Roll() // several segments, cleaned as one group
			}
			key := []kv{{[]byte(fmt.Sprintf("k%d", i%2)), []byte(fmt.Sprint("v", i))}}
			appendAll(t, l, keyedBatch(t, key, 0, int64(i), -1, 0), keyedBatch(t, key, 0, int64(i), -1, 0))
			first := l.LogEndOffset()
			appendAll(t, l, txnBatch(t, key, int64(10+i), 0))
			if i%3 == 2 {
				continue // committed below
			}
			marker := l.LogEndOffset()
			appendAll(t, l, markerBatch(t, int64(10+i), false))
			a := AbortedTxn{ProducerID: int64(10 + i), FirstOffset: first, LastOffset: marker, LastStableOffset: marker + 1}
			if err := l.AppendAbortedTxns([]AbortedTxn{a}); err != nil {
				t.Fatal(err)
			}
			aborted = append(aborted, a)
		}
		for i := 2; i < 6; i += 3 {
			appendAll(t, l, markerBatch(t, int64(10+i), true))
		}
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
		return l, dir, aborted
	}
	for stop := 1; ; stop++ {
		l, dir, want := build(t)
		p, err := l.PrepareClean(CleanOptions{MaxMapBytes: 1 << 20, UncleanableOffset: l.LogEndOffset()})
		if err != nil || p == nil {
			t.Fatal(p, err)
		}
		if err := p.Build(); err != nil {
			t.Fatal(err)
		}
		steps := 0
		p.hook = func(string) error {
			if steps++; steps == stop {
				return errCrash
			}
			return nil
		}
		before, _ := filepath.Glob(filepath.Join(dir, "*"+TxnIndexFileSuffix))
		_, err = l.CommitClean(p)
		if err == nil {
			if got, gerr := l.AbortedTxns(); gerr != nil || !slices.Equal(got, want) {
				t.Fatalf("after the swap: %+v (%v), want %+v", got, gerr, want)
			}
			if after, _ := filepath.Glob(filepath.Join(dir, "*"+TxnIndexFileSuffix)); len(after) >= len(before) {
				t.Fatalf("the group's indexes were not merged: %d files before, %d after", len(before), len(after))
			}
		}
		l.closeFiles()
		l2, _, oerr := Open(dir, cfg, OpenOptions{})
		if oerr != nil {
			t.Fatalf("stop %d: reopen: %v", stop, oerr)
		}
		got, gerr := l2.AbortedTxns()
		l2.Close()
		if gerr != nil || !slices.Equal(got, want) {
			t.Fatalf("stop %d: aborted %+v (%v), want %+v", stop, got, gerr, want)
		}
		if err == nil {
			if stop < 4 {
				t.Fatalf("only %d steps", stop)
			}
			return
		}
		if stop > 1000 {
			t.Fatal("too many steps")
		}
	}
}
