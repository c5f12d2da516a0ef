package segment

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// newEpochCache returns a cache in a fresh directory holding entries, built with Assign.
func newEpochCache(tb testing.TB, entries ...EpochEntry) (*LeaderEpochCache, string) {
	tb.Helper()
	dir := tb.TempDir()
	c, err := openLeaderEpochCache(dir)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range entries {
		if err := c.Assign(e.Epoch, e.StartOffset); err != nil {
			tb.Fatal(err)
		}
	}
	if got := c.Entries(); !slices.Equal(got, entries) && len(entries) > 0 {
		tb.Fatalf("built cache %v, want %v", got, entries)
	}
	return c, dir
}

// epochCheckpointText is leader-epoch-checkpoint's content for entries.
func epochCheckpointText(entries []EpochEntry) string {
	var b strings.Builder
	fmt.Fprintf(&b, "0\n%d\n", len(entries))
	for _, e := range entries {
		fmt.Fprintf(&b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return b.String()
}

// checkEpochs checks that c holds want and that its checkpoint in dir, read back as Open
// reads it, holds the same entries in Kafka's text format.
func checkEpochs(tb testing.TB, what string, c *LeaderEpochCache, dir string, want []EpochEntry) {
	tb.Helper()
	if got := c.Entries(); !slices.Equal(got, want) {
		tb.Fatalf("%s: entries %v, want %v", what, got, want)
	}
	path := filepath.Join(dir, LeaderEpochCheckpointFile)
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
	if string(data) != epochCheckpointText(want) {
		tb.Fatalf("%s: checkpoint %q, want %q", what, data, epochCheckpointText(want))
	}
	reread, err := openLeaderEpochCache(dir)
	if err != nil {
		tb.Fatalf("%s: reading the checkpoint back: %v", what, err)
	}
	if got := reread.Entries(); !slices.Equal(got, want) {
		tb.Fatalf("%s: checkpoint reads back as %v, want %v", what, got, want)
	}
	if _, err := os.Stat(path + checkpointTempSuffix); !os.IsNotExist(err) {
		tb.Fatalf("%s: temporary checkpoint left behind (%v)", what, err)
	}
}

var epochs137 = []EpochEntry{{1, 0}, {3, 10}, {7, 20}}

func TestLeaderEpochCacheAssign(t *testing.T) {
	tests := []struct {
		name   string
		start  []EpochEntry
		epoch  int32
		offset int64
		want   []EpochEntry
	}{
		{"first entry", nil, 4, 100, []EpochEntry{{4, 100}}},
		{"new epoch", epochs137, 9, 30, []EpochEntry{{1, 0}, {3, 10}, {7, 20}, {9, 30}}},
		{"same epoch, later start", epochs137, 7, 25, epochs137},
		{"same epoch, same start", epochs137, 7, 20, epochs137},
		{"same epoch, earlier start", epochs137, 7, 15, []EpochEntry{{1, 0}, {3, 10}, {7, 15}}},
		{"same epoch, start before the previous epoch's", epochs137, 7, 5, []EpochEntry{{1, 0}, {7, 5}}},
		{"new epoch at the latest start", epochs137, 9, 20, []EpochEntry{{1, 0}, {3, 10}, {9, 20}}},
		{"new epoch below the latest start", epochs137, 9, 15, []EpochEntry{{1, 0}, {3, 10}, {9, 15}}},
		{"lower epoch removes later entries", epochs137, 5, 25, []EpochEntry{{1, 0}, {3, 10}, {5, 25}}},
		{"lower epoch and offset", epochs137, 2, 5, []EpochEntry{{1, 0}, {2, 5}}},
		{"earlier existing epoch again", epochs137, 3, 10, []EpochEntry{{1, 0}, {3, 10}}},
		{"lowest epoch at zero", epochs137, 0, 0, []EpochEntry{{0, 0}}},
		{"negative epoch ignored", epochs137, -1, 40, epochs137},
		{"negative offset ignored", epochs137, 9, -1, epochs137},
		{"negative epoch on empty cache", nil, -1, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, dir := newEpochCache(t, tt.start...)
			if err := c.Assign(tt.epoch, tt.offset); err != nil {
				t.Fatal(err)
			}
			if len(tt.want) == 0 && len(tt.start) == 0 {
				if got := c.Entries(); len(got) != 0 {
					t.Fatalf("entries %v", got)
				}
				return // nothing was ever written
			}
			checkEpochs(t, fmt.Sprintf("Assign(%d, %d)", tt.epoch, tt.offset), c, dir, tt.want)
			if want := int32(-1); len(tt.want) > 0 {
				want = tt.want[len(tt.want)-1].Epoch
				if c.LatestEpoch() != want {
					t.Fatalf("latest epoch %d, want %d", c.LatestEpoch(), want)
				}
			}
		})
	}
}

func TestLeaderEpochCacheEndOffsetFor(t *testing.T) {
	const leo = 30
	tests := []struct {
		name      string
		entries   []EpochEntry
		requested int32
		epoch     int32
		end       int64
	}{
		{"undefined epoch", epochs137, -1, -1, -1},
		{"latest epoch: the log end offset", epochs137, 7, 7, leo},
		{"above the latest", epochs137, 8, -1, -1},
		{"far above the latest", epochs137, 1 << 30, -1, -1},
		{"an earlier epoch: where the next starts", epochs137, 3, 3, 20},
		{"the first epoch", epochs137, 1, 1, 10},
		{"between 3 and 7: epoch 3, its end", epochs137, 5, 3, 20},
		{"just below 7", epochs137, 6, 3, 20},
		{"between 1 and 3", epochs137, 2, 1, 10},
		{"below every entry: requested, first start", epochs137, 0, 0, 0},
		{"empty cache", nil, 0, -1, -1},
		{"empty cache, undefined", nil, -1, -1, -1},
		{"empty cache, large", nil, 5, -1, -1},
		{"single entry, latest", []EpochEntry{{5, 100}}, 5, 5, leo},
		{"single entry, below", []EpochEntry{{5, 100}}, 4, 4, 100},
		{"single entry, above", []EpochEntry{{5, 100}}, 6, -1, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newEpochCache(t, tt.entries...)
			epoch, end := c.EndOffsetFor(tt.requested, leo)
			if epoch != tt.epoch || end != tt.end {
				t.Fatalf("EndOffsetFor(%d, %d) on %v = (%d, %d), want (%d, %d)", tt.requested, leo, tt.entries, epoch, end, tt.epoch, tt.end)
			}
		})
	}
}

func TestLeaderEpochCacheTruncateFromEnd(t *testing.T) {
	tests := []struct {
		end  int64
		want []EpochEntry
	}{
		{100, epochs137},
		{21, epochs137},
		{20, []EpochEntry{{1, 0}, {3, 10}}},
		{11, []EpochEntry{{1, 0}, {3, 10}}},
		{10, []EpochEntry{{1, 0}}},
		{1, []EpochEntry{{1, 0}}},
		{0, nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.end), func(t *testing.T) {
			c, dir := newEpochCache(t, epochs137...)
			if err := c.TruncateFromEnd(tt.end); err != nil {
				t.Fatal(err)
			}
			checkEpochs(t, fmt.Sprintf("TruncateFromEnd(%d)", tt.end), c, dir, tt.want)
		})
	}
	c, _ := newEpochCache(t)
	if err := c.TruncateFromEnd(0); err != nil || len(c.Entries()) != 0 {
		t.Fatalf("empty cache: %v %v", c.Entries(), err)
	}
}

func TestLeaderEpochCacheTruncateFromStart(t *testing.T) {
	tests := []struct {
		start int64
		want  []EpochEntry
	}{
		{0, epochs137},
		{5, []EpochEntry{{1, 5}, {3, 10}, {7, 20}}},
		{9, []EpochEntry{{1, 9}, {3, 10}, {7, 20}}},
		{10, []EpochEntry{{3, 10}, {7, 20}}},
		{15, []EpochEntry{{3, 15}, {7, 20}}},
		{20, []EpochEntry{{7, 20}}},
		{100, []EpochEntry{{7, 100}}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.start), func(t *testing.T) {
			c, dir := newEpochCache(t, epochs137...)
			if err := c.TruncateFromStart(tt.start); err != nil {
				t.Fatal(err)
			}
			checkEpochs(t, fmt.Sprintf("TruncateFromStart(%d)", tt.start), c, dir, tt.want)
		})
	}
	// Entries that all start after the new log start are kept as they are.
	c, dir := newEpochCache(t, EpochEntry{4, 50}, EpochEntry{6, 60})
	if err := c.TruncateFromStart(10); err != nil {
		t.Fatal(err)
	}
	checkEpochs(t, "TruncateFromStart below every entry", c, dir, []EpochEntry{{4, 50}, {6, 60}})
}

// epochTestConfig has segments of two 5-record batches of epochSpec.
func epochTestConfig() Config {
	cfg := smallConfig()
	cfg.SegmentBytes = 4000
	cfg.IndexIntervalBytes = 500
	return cfg
}

var epochSpec = batchSpec{records: 5, valueSize: 300, baseTimestamp: 1000, tsStep: 1}

// appendEpochs appends one epochSpec batch per epoch as leader.
func appendEpochs(tb testing.TB, l *Log, epochs ...int32) {
	tb.Helper()
	for _, e := range epochs {
		appendN(tb, l, 1, epochSpec, e)
	}
}

func TestLeaderEpochsPersistAcrossReopen(t *testing.T) {
	cfg := epochTestConfig()
	l, dir := openTestLog(t, cfg, OpenOptions{})
	appendEpochs(t, l, 1, 1, 3, 3, 7)
	if len(l.Segments()) < 3 {
		t.Fatalf("%d segments, want several", len(l.Segments()))
	}
	checkEpochs(t, "after appends", l.LeaderEpochs(), dir, epochs137)

	for _, opts := range []OpenOptions{{CleanShutdown: true}, {}} {
		var rep *RecoveryReport
		l, rep = reopen(t, l, dir, cfg, opts)
		if rep.LeaderEpochsRebuilt {
			t.Fatalf("reopen %+v rebuilt the epochs", opts)
		}
		checkEpochs(t, fmt.Sprintf("reopened with %+v", opts), l.LeaderEpochs(), dir, epochs137)
	}

	// A log start offset moved past the first epoch trims the cache on open.
	l, _ = reopen(t, l, dir, cfg, OpenOptions{LogStartOffset: 12})
	checkEpochs(t, "reopened with log start 12", l.LeaderEpochs(), dir, []EpochEntry{{3, 12}, {7, 20}})
}

func TestLeaderEpochsRebuiltOnOpen(t *testing.T) {
	cfg := epochTestConfig()
	corruptions := []struct {
		name string
		data *string // nil: the file is removed
	}{
		{"garbage", epochText("not a checkpoint\x00\xff")},
		{"bad version", epochText("1\n3\n1 0\n3 10\n7 20\n")},
		{"wrong count", epochText("0\n4\n1 0\n3 10\n7 20\n")},
		{"non-numeric entry", epochText("0\n3\n1 0\nthree 10\n7 20\n")},
		{"extra field", epochText("0\n3\n1 0\n3 10 1\n7 20\n")},
		{"epochs out of order", epochText("0\n3\n3 0\n1 10\n7 20\n")},
		{"negative offset", epochText("0\n3\n1 -5\n3 10\n7 20\n")},
		{"empty file", epochText("")},
		{"missing", nil},
	}
	for _, c := range corruptions {
		for _, opts := range []OpenOptions{{CleanShutdown: true}, {}} {
			t.Run(fmt.Sprintf("%s, clean shutdown %v", c.name, opts.CleanShutdown), func(t *testing.T) {
				l, dir := openTestLog(t, cfg, OpenOptions{})
				appendEpochs(t, l, 1, 1, 3, 3, 7)
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(dir, LeaderEpochCheckpointFile)
				var err error
				if c.data == nil {
					err = os.Remove(path)
				} else {
					err = os.WriteFile(path, []byte(*c.data), 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
				l, rep, err := Open(dir, cfg, opts)
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				if !rep.LeaderEpochsRebuilt {
					t.Fatalf("report %+v: epochs not rebuilt", rep)
				}
				if rep.Cut != nil || l.LogEndOffset() != 25 {
					t.Fatalf("report %+v, log end offset %d", rep, l.LogEndOffset())
				}
				checkEpochs(t, "rebuilt", l.LeaderEpochs(), dir, epochs137)
			})
		}
	}

	// Rebuilt with a log start offset inside epoch 3: the cache starts there.
	l, dir := openTestLog(t, cfg, OpenOptions{})
	appendEpochs(t, l, 1, 1, 3, 3, 7)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, LeaderEpochCheckpointFile), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, rep, err := Open(dir, cfg, OpenOptions{LogStartOffset: 12})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !rep.LeaderEpochsRebuilt {
		t.Fatal("not rebuilt")
	}
	checkEpochs(t, "rebuilt with log start 12", l.LeaderEpochs(), dir, []EpochEntry{{3, 12}, {7, 20}})
}

func epochText(s string) *string { return &s }

func TestAppendAssignsLeaderEpochs(t *testing.T) {
	l, dir := openTestLog(t, epochTestConfig(), OpenOptions{})
	appendEpochs(t, l, 2, 2)
	checkEpochs(t, "epoch 2", l.LeaderEpochs(), dir, []EpochEntry{{2, 0}})

	leo := l.LogEndOffset()
	appendEpochs(t, l, 5)
	checkEpochs(t, "epoch 5 after 2", l.LeaderEpochs(), dir, []EpochEntry{{2, 0}, {5, leo}})

	appendEpochs(t, l, 5, 5)
	checkEpochs(t, "epoch 5 again", l.LeaderEpochs(), dir, []EpochEntry{{2, 0}, {5, leo}})

	// Several batches in one append: the first batch of a new epoch starts it.
	var buf []byte
	for range 2 { // within segment.bytes (a leader refuses larger appends)
		buf = append(buf, makeBatch(t, epochSpec)...)
	}
	leo8 := l.LogEndOffset()
	if _, err := l.AppendAsLeader(buf, 8); err != nil {
		t.Fatal(err)
	}
	checkEpochs(t, "epoch 8, two batches", l.LeaderEpochs(), dir, []EpochEntry{{2, 0}, {5, leo}, {8, leo8}})

	// A follower appending the leader's batches takes their epochs.
	f, fdir := openTestLog(t, epochTestConfig(), OpenOptions{})
	for off := int64(0); off < l.LogEndOffset(); {
		r, err := l.Read(off, 1<<20, l.LogEndOffset())
		if err != nil {
			t.Fatal(err)
		}
		b, err := r.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.AppendAsFollower(b); err != nil {
			t.Fatal(err)
		}
		off = r.LastOffset + 1
	}
	checkEpochs(t, "follower", f.LeaderEpochs(), fdir, []EpochEntry{{2, 0}, {5, leo}, {8, leo8}})

	// EndOffsetFor on the log's cache.
	for _, tt := range []struct {
		requested, epoch int32
		end              int64
	}{{8, 8, l.LogEndOffset()}, {5, 5, leo8}, {7, 5, leo8}, {2, 2, leo}, {1, 1, 0}, {9, -1, -1}} {
		if e, end := l.LeaderEpochs().EndOffsetFor(tt.requested, l.LogEndOffset()); e != tt.epoch || end != tt.end {
			t.Fatalf("EndOffsetFor(%d) = (%d, %d), want (%d, %d)", tt.requested, e, end, tt.epoch, tt.end)
		}
	}
}

func TestTruncateToRemovesLeaderEpochs(t *testing.T) {
	cfg := epochTestConfig()
	l, dir := openTestLog(t, cfg, OpenOptions{})
	appendEpochs(t, l, 1, 1, 3, 3, 7) // epoch 1 at 0, 3 at 10, 7 at 20; log end 25

	steps := []struct {
		to      int64
		wantLEO int64
		want    []EpochEntry
	}{
		{25, 25, epochs137},                     // at the log end: nothing
		{21, 20, []EpochEntry{{1, 0}, {3, 10}}}, // batch 20..24 straddles 21: removed whole
		{20, 20, []EpochEntry{{1, 0}, {3, 10}}},
		{12, 10, []EpochEntry{{1, 0}}},
	}
	for _, s := range steps {
		leo, err := l.TruncateTo(s.to)
		if err != nil || leo != s.wantLEO || l.LogEndOffset() != s.wantLEO {
			t.Fatalf("TruncateTo(%d) = %d, %v; want %d", s.to, leo, err, s.wantLEO)
		}
		checkEpochs(t, fmt.Sprintf("TruncateTo(%d)", s.to), l.LeaderEpochs(), dir, s.want)
	}

	// An epoch that starts at the log end (a leadership that appended nothing) goes
	// with a truncation to the log end, or beyond it.
	if err := l.LeaderEpochs().AssignLeaderStart(5, 10); err != nil {
		t.Fatal(err)
	}
	if leo, err := l.TruncateTo(10); err != nil || leo != 10 {
		t.Fatalf("TruncateTo(10) at the log end = %d, %v", leo, err)
	}
	checkEpochs(t, "TruncateTo(10) with epoch 5 at the log end", l.LeaderEpochs(), dir, []EpochEntry{{1, 0}})

	// A new leader in a lower epoch than the truncated one appends at the new end.
	appendEpochs(t, l, 4)
	checkEpochs(t, "epoch 4 after truncation", l.LeaderEpochs(), dir, []EpochEntry{{1, 0}, {4, 10}})

	l, rep := reopen(t, l, dir, cfg, OpenOptions{})
	if rep.LeaderEpochsRebuilt {
		t.Fatal("rebuilt")
	}
	checkEpochs(t, "reopened after truncation", l.LeaderEpochs(), dir, []EpochEntry{{1, 0}, {4, 10}})

	if leo, err := l.TruncateTo(0); err != nil || leo != 0 {
		t.Fatalf("TruncateTo(0) = %d, %v", leo, err)
	}
	checkEpochs(t, "TruncateTo(0)", l.LeaderEpochs(), dir, nil)

	// TruncateFullyAndStartAt clears the cache too.
	appendEpochs(t, l, 6)
	if err := l.TruncateFullyAndStartAt(100); err != nil {
		t.Fatal(err)
	}
	checkEpochs(t, "TruncateFullyAndStartAt", l.LeaderEpochs(), dir, nil)
	appendEpochs(t, l, 6)
	checkEpochs(t, "epoch 6 at 100", l.LeaderEpochs(), dir, []EpochEntry{{6, 100}})
}

func TestAdvanceLogStartOffsetTrimsLeaderEpochs(t *testing.T) {
	l, dir := openTestLog(t, epochTestConfig(), OpenOptions{})
	appendEpochs(t, l, 1, 1, 3, 3, 7)
	if err := l.AdvanceLogStartOffset(12); err != nil {
		t.Fatal(err)
	}
	checkEpochs(t, "log start 12", l.LeaderEpochs(), dir, []EpochEntry{{3, 12}, {7, 20}})
	if err := l.AdvanceLogStartOffset(22); err != nil {
		t.Fatal(err)
	}
	checkEpochs(t, "log start 22", l.LeaderEpochs(), dir, []EpochEntry{{7, 22}})
}
