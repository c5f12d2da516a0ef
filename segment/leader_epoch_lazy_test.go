package segment

import (
	"os"
	"path/filepath"
	"testing"
)

// checkpointText reads dir's leader-epoch-checkpoint as it is on disk.
func checkpointText(tb testing.TB, dir string) string {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(dir, LeaderEpochCheckpointFile))
	if err != nil {
		tb.Fatal(err)
	}
	return string(data)
}

// TestAssignLeaderStartCrashWithoutAppend: a new leadership's epoch is seen at once in
// memory but not written; a crash before any append leaves the old entries and the log
// intact, and the next leadership takes over cleanly.
func TestAssignLeaderStartCrashWithoutAppend(t *testing.T) {
	cfg := epochTestConfig()
	l, dir := openTestLog(t, cfg, OpenOptions{})
	appendEpochs(t, l, 1, 1, 3)
	end := l.LogEndOffset()
	old := []EpochEntry{{1, 0}, {3, 10}}
	before := checkpointText(t, dir)
	if err := l.LeaderEpochs().AssignLeaderStart(5, end); err != nil {
		t.Fatal(err)
	}
	if got := l.LeaderEpochs().LatestEpoch(); got != 5 {
		t.Fatalf("latest epoch %d after AssignLeaderStart(5), want 5", got)
	}
	if e, o := l.LeaderEpochs().EndOffsetFor(3, end); e != 3 || o != end {
		t.Fatalf("EndOffsetFor(3) = (%d, %d), want (3, %d): the new epoch starts at the log end", e, o, end)
	}
	if e, o := l.LeaderEpochs().EndOffsetFor(5, end); e != 5 || o != end {
		t.Fatalf("EndOffsetFor(5) = (%d, %d), want (5, %d)", e, o, end)
	}
	if got := checkpointText(t, dir); got != before {
		t.Fatalf("checkpoint rewritten by AssignLeaderStart: %q, was %q", got, before)
	}
	l.closeFiles() // a crash
	l, rep, err := Open(dir, cfg, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if rep.Cut != nil || l.LogEndOffset() != end {
		t.Fatalf("after the crash: end %d (cut %+v), want %d", l.LogEndOffset(), rep.Cut, end)
	}
	checkEpochs(t, "after the crash", l.LeaderEpochs(), dir, old)
	if got := len(readAll(t, l)); got != 3 {
		t.Fatalf("read %d batches after the crash, want 3", got)
	}
	// The next leadership (a higher epoch) appends; its entry is durable before its records.
	if err := l.LeaderEpochs().AssignLeaderStart(6, end); err != nil {
		t.Fatal(err)
	}
	appendEpochs(t, l, 6)
	checkEpochs(t, "after the next leadership's append", l.LeaderEpochs(), dir, append(old, EpochEntry{6, end}))
}

// TestAssignLeaderStartCrashAfterAppend: the first append of a new leadership writes the
// checkpoint before its records, so a crash after it finds the entry.
func TestAssignLeaderStartCrashAfterAppend(t *testing.T) {
	cfg := epochTestConfig()
	l, dir := openTestLog(t, cfg, OpenOptions{})
	appendEpochs(t, l, 1, 1)
	end := l.LogEndOffset()
	if err := l.LeaderEpochs().AssignLeaderStart(4, end); err != nil {
		t.Fatal(err)
	}
	appendEpochs(t, l, 4, 4)
	want := []EpochEntry{{1, 0}, {4, end}}
	checkEpochs(t, "after the append", l.LeaderEpochs(), dir, want)
	newEnd := l.LogEndOffset()
	l.closeFiles() // a crash
	l, rep, err := Open(dir, cfg, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if rep.Cut != nil || l.LogEndOffset() != newEnd {
		t.Fatalf("after the crash: end %d (cut %+v), want %d", l.LogEndOffset(), rep.Cut, newEnd)
	}
	checkEpochs(t, "after the crash", l.LeaderEpochs(), dir, want)
}

// TestAssignLeaderStartReplacesEmptyEpoch: a leadership that wrote nothing is replaced by
// the next one at the same offset, in memory and, with the next append, on disk, as
// Assign would; a clean close does not write the pending entry.
func TestAssignLeaderStartReplacesEmptyEpoch(t *testing.T) {
	cfg := epochTestConfig()
	l, dir := openTestLog(t, cfg, OpenOptions{})
	appendEpochs(t, l, 1)
	end := l.LogEndOffset()
	for _, e := range []int32{2, 3} {
		if err := l.LeaderEpochs().AssignLeaderStart(e, end); err != nil {
			t.Fatal(err)
		}
	}
	if got := l.LeaderEpochs().Entries(); len(got) != 2 || got[1] != (EpochEntry{3, end}) {
		t.Fatalf("entries %v, want [{1 0} {3 %d}]", got, end)
	}
	// An epoch at or below the latest is a plain Assign, written at once.
	if err := l.LeaderEpochs().AssignLeaderStart(3, end); err != nil {
		t.Fatal(err)
	}
	l, _ = reopen(t, l, dir, cfg, OpenOptions{CleanShutdown: true})
	checkEpochs(t, "after a clean close", l.LeaderEpochs(), dir, []EpochEntry{{1, 0}})
	if err := l.LeaderEpochs().AssignLeaderStart(3, end); err != nil {
		t.Fatal(err)
	}
	appendEpochs(t, l, 3)
	checkEpochs(t, "after the append", l.LeaderEpochs(), dir, []EpochEntry{{1, 0}, {3, end}})
}
