package segment

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"testing"
)

var fileCacheFlag = flag.Int("segment.filecache", 0, "run every test with one shared FileCache of this many segments (0: none)")

func TestMain(m *testing.M) {
	flag.Parse()
	if *fileCacheFlag > 0 {
		testFiles = NewFileCache(*fileCacheFlag)
	}
	os.Exit(m.Run())
}

// cacheTestConfig has segments of a few batches, so that each log has several.
func cacheTestConfig() Config {
	cfg := smallConfig()
	cfg.SegmentBytes = 4 << 10
	cfg.IndexIntervalBytes = 256
	return cfg
}

// TestFileCacheMoreLogsThanCapacity writes and reads 24 logs, each of several segments,
// through a cache that keeps only 4 segments open: every batch reads back as written,
// offset and time lookups stay right across evictions, and no more than the capacity is
// ever left open between calls.
func TestFileCacheMoreLogsThanCapacity(t *testing.T) {
	const logs, capacity, rounds = 24, 4, 12
	cfg := cacheTestConfig()
	fc := NewFileCache(capacity)
	ls := make([]*Log, logs)
	dirs := make([]string, logs)
	written := make([][][]byte, logs)
	for i := range ls {
		ls[i], dirs[i] = openTestLog(t, cfg, OpenOptions{Files: fc})
	}
	checkOpen := func(when string) {
		t.Helper()
		if st := fc.Stats(); st.Open > capacity {
			t.Fatalf("%s: %d segments open, capacity %d", when, st.Open, capacity)
		}
	}
	for r := 0; r < rounds; r++ {
		for i, l := range ls {
			spec := batchSpec{records: 3, valueSize: 300, baseTimestamp: int64(1_000_000 + r*1000), tsStep: 10, seed: byte(r + i)}
			b := makeBatch(t, spec)
			if _, err := l.AppendAsLeader(b, 1); err != nil {
				t.Fatalf("log %d round %d: %v", i, r, err)
			}
			written[i] = append(written[i], b)
			checkOpen("after an append")
		}
	}
	for i, l := range ls {
		if n := len(l.Segments()); n < 3 {
			t.Fatalf("log %d has %d segments; the test needs several", i, n)
		}
		got := readAll(t, l)
		if len(got) != len(written[i]) {
			t.Fatalf("log %d: read %d batches, wrote %d", i, len(got), len(written[i]))
		}
		for j := range got {
			if !bytes.Equal(got[j], written[i][j]) {
				t.Fatalf("log %d batch %d differs", i, j)
			}
		}
		checkOpen("after reads")
	}
	if st := fc.Stats(); st.Evicts == 0 || st.Opens == 0 {
		t.Fatalf("nothing was evicted and reopened: %+v", st)
	}
	// Offset and time lookups in every segment, each reopened from eviction.
	for i, l := range ls {
		for r := 0; r < rounds; r++ {
			off := int64(r*3 + 1) // the second record of round r's batch
			rg, err := l.Read(off, 1, l.LogEndOffset())
			if err != nil {
				t.Fatal(err)
			}
			if rg.FirstOffset != int64(r*3) {
				t.Fatalf("log %d: read at %d starts at %d, want %d", i, off, rg.FirstOffset, r*3)
			}
			rg.Release()
			ts := int64(1_000_000+r*1000) + 15 // between the second and the third record
			to, ok, err := l.OffsetForTimestamp(ts)
			if err != nil || !ok || to.Offset != int64(r*3+2) || to.Timestamp != ts+5 {
				t.Fatalf("log %d: offset for timestamp %d = %+v %v %v, want offset %d", i, ts, to, ok, err, r*3+2)
			}
			checkOpen("after lookups")
		}
	}
	// Indexes written through evictions are valid on disk: a clean reopen trusts them.
	for i, l := range ls {
		nl, rep := reopen(t, l, dirs[i], cfg, OpenOptions{Files: fc, CleanShutdown: true})
		ls[i] = nl
		if len(rep.IndexesRebuilt) != 0 || rep.Cut != nil {
			t.Fatalf("log %d: reopen rebuilt %v, cut %v", i, rep.IndexesRebuilt, rep.Cut)
		}
		if got := readAll(t, nl); len(got) != rounds {
			t.Fatalf("log %d after reopen: %d batches", i, len(got))
		}
	}
	checkOpen("after reopening")
}

// TestFileCacheRecoveryAfterEviction: a crash (no clean close) of logs whose segments
// were evicted loses nothing that was flushed, and recovery finds valid data.
func TestFileCacheRecoveryAfterEviction(t *testing.T) {
	cfg := cacheTestConfig()
	fc := NewFileCache(1)
	var dirs []string
	var logs []*Log
	for i := 0; i < 4; i++ {
		dir := t.TempDir()
		l, _, err := Open(dir, cfg, OpenOptions{Files: fc})
		if err != nil {
			t.Fatal(err)
		}
		appendN(t, l, 20, batchSpec{records: 2, valueSize: 200, baseTimestamp: 5000, tsStep: 1}, 0)
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		dirs, logs = append(dirs, dir), append(logs, l)
	}
	for i, l := range logs {
		end := l.LogEndOffset()
		l.closeFiles() // a crash: indexes left preallocated, no flush
		nl, rep, err := Open(dirs[i], cfg, OpenOptions{Files: fc})
		if err != nil {
			t.Fatal(err)
		}
		if nl.LogEndOffset() != end || rep.Cut != nil {
			t.Fatalf("log %d: end %d after recovery (cut %v), want %d", i, nl.LogEndOffset(), rep.Cut, end)
		}
		nl.Close()
	}
}

// TestFileRangePinned: a FileRange stays readable while other logs' use evicts
// everything else, and its segment becomes evictable once it is released.
func TestFileRangePinned(t *testing.T) {
	cfg := cacheTestConfig()
	fc := NewFileCache(1)
	a, _ := openTestLog(t, cfg, OpenOptions{Files: fc})
	b, _ := openTestLog(t, cfg, OpenOptions{Files: fc})
	want := appendN(t, a, 1, batchSpec{records: 1, valueSize: 100}, 0)
	r, err := a.Read(0, 1<<20, a.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ { // b's appends need its segments open: a's is pinned
		appendN(t, b, 1, batchSpec{records: 1, valueSize: 1000}, 0)
	}
	if a.segments[0].log == nil {
		t.Fatalf("pinned segment closed: %+v", fc.Stats())
	}
	var sent bytes.Buffer
	if _, err := r.WriteTo(&sent); err != nil {
		t.Fatalf("pinned range: %v", err)
	}
	if !bytes.Equal(sent.Bytes(), want[0]) {
		t.Fatal("pinned range read other bytes")
	}
	r.Release()
	r.Release() // a second release does nothing
	appendN(t, b, 1, batchSpec{records: 1, valueSize: 1000}, 0)
	if st := fc.Stats(); st.Open > 1 || a.segments[0].log != nil {
		t.Fatalf("released segment still open over capacity: %+v", st)
	}
}

// TestFileCacheOpenFailure: a segment that cannot be reopened fails the call with the
// error (the log is not failed for a read) and works again once the file is back.
func TestFileCacheOpenFailure(t *testing.T) {
	cfg := cacheTestConfig()
	fc := NewFileCache(1)
	a, dir := openTestLog(t, cfg, OpenOptions{Files: fc})
	b, _ := openTestLog(t, cfg, OpenOptions{Files: fc})
	appendN(t, a, 3, batchSpec{records: 1, valueSize: 100}, 0)
	appendN(t, b, 1, batchSpec{records: 1, valueSize: 100}, 0) // evicts a's segment
	path := segmentPath(dir, 0, LogFileSuffix)
	if err := os.Rename(path, path+".away"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Read(0, 1<<20, a.LogEndOffset()); err == nil {
		t.Fatal("read of a segment that cannot be opened succeeded")
	}
	if err := os.Rename(path+".away", path); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, a); len(got) != 3 {
		t.Fatalf("read %d batches after the file came back", len(got))
	}
}

func BenchmarkFileCacheReopen(b *testing.B) {
	cfg := cacheTestConfig()
	fc := NewFileCache(1)
	var ls []*Log
	for i := 0; i < 2; i++ {
		l, _ := openTestLog(b, cfg, OpenOptions{Files: fc})
		appendN(b, l, 4, batchSpec{records: 1, valueSize: 100}, 0)
		ls = append(ls, l)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := ls[i%2].Read(0, 1<<20, 1)
		if err != nil {
			b.Fatal(fmt.Sprint(err))
		}
		r.Release()
	}
}
