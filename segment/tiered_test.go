package segment

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"
)

// tieredTestLog opens a log of 10 batches of 2 records, two batches per segment:
// segments [0,4) [4,8) [8,12) [12,16) and the active [16,20), whose largest timestamps
// are 2000, 4000, 6000, 8000 and 10000; batch i is written in leader epoch i/3.
func tieredTestLog(t *testing.T, cfg Config, clock *testClock) (*Log, string, int64) {
	t.Helper()
	spec := batchSpec{records: 2, valueSize: 100}
	batchSize := int64(len(makeBatch(t, spec)))
	cfg.SegmentBytes = 2 * batchSize
	l, dir := openTestLog(t, cfg, OpenOptions{Now: clock.now})
	for i := 0; i < 10; i++ {
		spec.baseTimestamp = int64(1000 * (i + 1))
		appendN(t, l, 1, spec, int32(i/3))
	}
	if n := len(l.Segments()); n != 5 {
		t.Fatalf("%d segments", n)
	}
	return l, dir, batchSize
}

func remoteConfig() Config {
	cfg := smallConfig()
	cfg.RemoteStorageEnable = true
	return cfg
}

func segmentBases(l *Log) []int64 {
	var out []int64
	for _, s := range l.Segments() {
		out = append(out, s.BaseOffset)
	}
	return out
}

// TestTieredRetentionWaitsForCopies: with remote storage enabled no local segment is
// deleted before it is wholly copied, however far past retention it is; deleting it
// moves the local log start offset only.
func TestTieredRetentionWaitsForCopies(t *testing.T) {
	clock := &testClock{time.UnixMilli(1 << 50)} // everything is expired
	cfg := remoteConfig()
	cfg.RetentionMs = 1
	l, _, _ := tieredTestLog(t, cfg, clock)
	steps := []struct {
		highestCopied int64
		wantBases     []int64
	}{
		{-1, []int64{0, 4, 8, 12, 16}}, // nothing copied: nothing goes
		{2, []int64{0, 4, 8, 12, 16}},  // [0,4) is not wholly copied
		{5, []int64{4, 8, 12, 16}},     // [0,4) is; [4,8) is not
		{11, []int64{12, 16}},
		{3, []int64{12, 16}}, // a smaller value holds deletion back, deletes nothing
		{math.MaxInt64 - 1, []int64{16}},
	}
	for _, s := range steps {
		if err := l.SetRemoteLogState(s.highestCopied, 0, l.LogEndOffset()); err != nil {
			t.Fatal(err)
		}
		res, err := l.EnforceRetention(math.MaxInt64)
		if err != nil {
			t.Fatal(err)
		}
		if got := segmentBases(l); !slices.Equal(got, s.wantBases) {
			t.Fatalf("highest copied %d: segments %v, want %v", s.highestCopied, got, s.wantBases)
		}
		if l.LogStartOffset() != 0 || res.LogStartOffset != 0 || l.LocalLogStartOffset() != s.wantBases[0] || res.LocalLogStartOffset != s.wantBases[0] {
			t.Fatalf("highest copied %d: log start %d, local %d, result %+v", s.highestCopied, l.LogStartOffset(), l.LocalLogStartOffset(), res)
		}
	}
	// The epoch cache keeps the epochs of the remote tier.
	if e := l.LeaderEpochs().Entries(); len(e) == 0 || e[0].StartOffset != 0 {
		t.Fatalf("epochs %+v", e)
	}
}

// TestTieredLocalRetention: local.retention.* decide local deletion (-2 meaning the
// topic's retention.*), bounded by the topic's retention.*; without remote storage
// they are ignored.
func TestTieredLocalRetention(t *testing.T) {
	spec := batchSpec{records: 2, valueSize: 100}
	batchSize := int64(len(makeBatch(t, spec)))
	cases := []struct {
		name                  string
		remote                bool
		retentionMs, localMs  int64
		retentionB, localB    int64 // in batches; -1 and -2 as they are
		wantLocalStart        int64
		wantDeletedCount      int
		highestCopiedOverride int64 // 0: everything copied
	}{
		{"local.retention.ms", true, -1, 2000, -1, -2, 8, 2, 0},
		{"local.retention.ms -2 is retention.ms", true, 2000, -2, -1, -2, 8, 2, 0},
		{"local.retention.ms above retention.ms", true, 2000, 1 << 40, -1, -2, 8, 2, 0},
		{"local.retention.ms -1 keeps", true, -1, -1, -1, -2, 0, 0, 0},
		{"local.retention.bytes", true, -1, -1, -1, 5, 8, 2, 0},
		{"local.retention.bytes -2 is retention.bytes", true, -1, -2, 5, -2, 8, 2, 0},
		{"local.retention.bytes smaller than retention.bytes", true, -1, -2, 8, 3, 12, 3, 0},
		{"copies behind hold local retention", true, -1, 2000, -1, -2, 4, 1, 4},
		{"no remote storage: local limits ignored", false, -1, 2000, -1, 3, 0, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := &testClock{time.UnixMilli(6500)} // segments [0,4) and [4,8) are 2000 ms old or more
			cfg := smallConfig()
			cfg.RemoteStorageEnable = c.remote
			cfg.RetentionMs, cfg.LocalRetentionMs = c.retentionMs, c.localMs
			bytes := func(n int64) int64 {
				if n < 0 {
					return n
				}
				return n * batchSize
			}
			cfg.RetentionBytes, cfg.LocalRetentionBytes = bytes(c.retentionB), bytes(c.localB)
			l, _, _ := tieredTestLog(t, cfg, clock)
			copied := int64(math.MaxInt64 - 1)
			if c.highestCopiedOverride != 0 {
				copied = c.highestCopiedOverride
			}
			if err := l.SetRemoteLogState(copied, -1, l.LogEndOffset()); err != nil {
				t.Fatal(err)
			}
			res, err := l.EnforceRetention(math.MaxInt64)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.DeletedSegments) != c.wantDeletedCount || l.LocalLogStartOffset() != c.wantLocalStart {
				t.Fatalf("result %+v, local log start %d", res, l.LocalLogStartOffset())
			}
			wantStart := int64(0)
			if !c.remote {
				wantStart = c.wantLocalStart
			}
			if l.LogStartOffset() != wantStart {
				t.Fatalf("log start %d, want %d", l.LogStartOffset(), wantStart)
			}
		})
	}
}

// TestTieredAdvanceLogStartOffset: DeleteRecords below the local log start moves the
// log start only; above it, the local log start too, and the local segments wholly
// below it go at once, copied or not.
func TestTieredAdvanceLogStartOffset(t *testing.T) {
	clock := &testClock{time.UnixMilli(0)}
	l, _, _ := tieredTestLog(t, remoteConfig(), clock)
	l.SetRemoteLogState(3, 0, l.LogEndOffset())
	l.cfg.RetentionMs = 1
	clock.advance(time.Hour)
	if _, err := l.EnforceRetention(math.MaxInt64); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 0 || l.LocalLogStartOffset() != 4 {
		t.Fatalf("log start %d, local %d", l.LogStartOffset(), l.LocalLogStartOffset())
	}
	l.cfg.RetentionMs = -1
	if err := l.AdvanceLogStartOffset(2); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 2 || l.LocalLogStartOffset() != 4 || !l.InRemoteTier(2) || !l.InRemoteTier(3) || l.InRemoteTier(1) || l.InRemoteTier(4) {
		t.Fatalf("log start %d, local %d", l.LogStartOffset(), l.LocalLogStartOffset())
	}
	if err := l.AdvanceLogStartOffset(9); err != nil {
		t.Fatal(err)
	}
	// [4,8) is wholly below the new start: it goes uncopied (Kafka's
	// deleteLogStartOffsetBreachedSegments); [8,12) holds 9 and waits for its copy.
	if got := segmentBases(l); l.LogStartOffset() != 9 || l.LocalLogStartOffset() != 9 || !slices.Equal(got, []int64{8, 12, 16}) {
		t.Fatalf("log start %d, local %d, segments %v", l.LogStartOffset(), l.LocalLogStartOffset(), got)
	}
	if _, err := l.Read(8, 1<<20, l.LogEndOffset()); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below the local log start: %v", err)
	}
	if e := l.LeaderEpochs().Entries(); e[0].StartOffset != 9 {
		t.Fatalf("epochs %+v", e)
	}
	l.SetRemoteLogState(7, -1, l.LogEndOffset())
	if _, err := l.EnforceRetention(math.MaxInt64); err != nil {
		t.Fatal(err)
	}
	if got := segmentBases(l); !slices.Equal(got, []int64{8, 12, 16}) || l.LocalLogStartOffset() != 9 {
		t.Fatalf("segments %v, local %d", got, l.LocalLogStartOffset())
	}
}

// TestTieredRemoteLogStartMovesLogStart: a remote log start above the log start (remote
// retention deleted segments) moves it, and the local log start when it passes it, never
// past upTo; one below, or none, changes nothing.
func TestTieredRemoteLogStartMovesLogStart(t *testing.T) {
	clock := &testClock{time.UnixMilli(0)}
	l, _, _ := tieredTestLog(t, remoteConfig(), clock)
	l.cfg.RetentionMs = 1
	clock.advance(time.Hour)
	l.SetRemoteLogState(7, 0, 20)
	l.EnforceRetention(math.MaxInt64) // [0,4) and [4,8) go: local start 8
	l.cfg.RetentionMs = -1
	steps := []struct {
		remoteStart, upTo    int64
		wantStart, wantLocal int64
	}{
		{-1, 20, 0, 8},
		{3, 20, 3, 8},
		{2, 20, 3, 8},
		{10, 20, 10, 10},
		{18, 15, 15, 15},
	}
	for _, s := range steps {
		if err := l.SetRemoteLogState(7, s.remoteStart, s.upTo); err != nil {
			t.Fatal(err)
		}
		if l.LogStartOffset() != s.wantStart || l.LocalLogStartOffset() != s.wantLocal {
			t.Fatalf("remote start %d: log start %d, local %d", s.remoteStart, l.LogStartOffset(), l.LocalLogStartOffset())
		}
	}
	// Without remote storage the start offsets are one and the remote state moves none.
	clock2 := &testClock{time.UnixMilli(0)}
	l2, _, _ := tieredTestLog(t, smallConfig(), clock2)
	if err := l2.SetRemoteLogState(19, 12, 20); err != nil || l2.LogStartOffset() != 0 || l2.LocalLogStartOffset() != 0 || l2.InRemoteTier(0) {
		t.Fatalf("log start %d, local %d, %v", l2.LogStartOffset(), l2.LocalLogStartOffset(), err)
	}
}

// TestTieredReopenKeepsLogStart: with remote storage the checkpointed log start below
// the first local segment survives a reopen; without, the log starts at its segments.
func TestTieredReopenKeepsLogStart(t *testing.T) {
	for _, remote := range []bool{true, false} {
		clock := &testClock{time.UnixMilli(0)}
		cfg := smallConfig()
		cfg.RemoteStorageEnable = true
		l, dir, _ := tieredTestLog(t, cfg, clock)
		l.SetRemoteLogState(7, 0, 20)
		l.cfg.RetentionMs = 1
		clock.advance(time.Hour)
		l.EnforceRetention(math.MaxInt64)
		if l.LogStartOffset() != 0 || l.LocalLogStartOffset() != 8 {
			t.Fatalf("log start %d, local %d", l.LogStartOffset(), l.LocalLogStartOffset())
		}
		cfg.RemoteStorageEnable = remote
		nl, _ := reopen(t, l, dir, cfg, OpenOptions{Now: clock.now, LogStartOffset: 2})
		wantStart := int64(2)
		if !remote {
			wantStart = 8
		}
		if nl.LogStartOffset() != wantStart || nl.LocalLogStartOffset() != 8 {
			t.Fatalf("remote %v: log start %d, local %d", remote, nl.LogStartOffset(), nl.LocalLogStartOffset())
		}
		if e := nl.LeaderEpochs().Entries(); e[0].StartOffset != wantStart {
			t.Fatalf("remote %v: epochs %+v", remote, e)
		}
	}
}

// TestStartAtFromRemote: a follower's log rebuilt from remote storage starts empty at the
// leader's local log start, with the leader's log start and the remote epochs below it.
func TestStartAtFromRemote(t *testing.T) {
	clock := &testClock{time.UnixMilli(0)}
	l, _, _ := tieredTestLog(t, remoteConfig(), clock)
	epochs := []EpochEntry{{0, 0}, {1, 2}, {2, 5}, {3, 9}, {4, 30}}
	if err := l.StartAtFromRemote(30, 3, epochs); err != nil {
		t.Fatal(err)
	}
	want := []EpochEntry{{1, 3}, {2, 5}, {3, 9}}
	if got := l.LeaderEpochs().Entries(); !slices.Equal(got, want) {
		t.Fatalf("epochs %+v, want %+v", got, want)
	}
	if l.LogStartOffset() != 3 || l.LocalLogStartOffset() != 30 || l.LogEndOffset() != 30 || len(l.Segments()) != 1 {
		t.Fatalf("log start %d, local %d, end %d", l.LogStartOffset(), l.LocalLogStartOffset(), l.LogEndOffset())
	}
	if err := l.StartAtFromRemote(30, 31, nil); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("log start above the local one: %v", err)
	}
}

// TestTieredTruncationLowersHighestCopied: a truncation lowers the highest copied
// offset to below the new log end, so that the records a new lineage writes there
// (after an unclean election) are not taken for copied and deleted before their copy.
func TestTieredTruncationLowersHighestCopied(t *testing.T) {
	clock := &testClock{time.UnixMilli(1 << 50)} // everything is expired
	cfg := remoteConfig()
	cfg.RetentionMs = 1
	l, _, _ := tieredTestLog(t, cfg, clock)
	if err := l.SetRemoteLogState(15, 0, l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.TruncateTo(10); err != nil { // [8,12) cut to [8,10)
		t.Fatal(err)
	}
	if h := l.HighestCopiedOffset(); h != 9 {
		t.Fatalf("highest copied %d after truncating to 10; want 9", h)
	}
	spec := batchSpec{records: 2, valueSize: 100, baseTimestamp: 1000}
	appendN(t, l, 4, spec, 7) // the new lineage: 10-17 in epoch 7, rolled past
	if _, err := l.EnforceRetention(math.MaxInt64); err != nil {
		t.Fatal(err)
	}
	if first := l.FirstSegmentBaseOffset(); first > 10 {
		t.Fatalf("first local segment %d: epoch 7's records from 10 were deleted uncopied", first)
	}
	if err := l.TruncateFullyAndStartAt(4); err != nil {
		t.Fatal(err)
	}
	if h := l.HighestCopiedOffset(); h != 3 {
		t.Fatalf("highest copied %d after starting at 4; want 3", h)
	}
}
