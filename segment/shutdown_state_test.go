package segment

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// loadedState is what a loaded segment holds in memory, for comparing two opens of one
// log (the creation time aside: a listing open takes the .log's modification time).
type loadedState struct {
	base, size, next, maxTs, offMaxTs, firstTs int64
	sinceIndex, offsetEntries, timeEntries     int
	offsetWritable, timeWritable               bool
}

func loadedStates(l *Log) []loadedState {
	out := make([]loadedState, len(l.segments))
	for i, s := range l.segments {
		out[i] = loadedState{s.baseOffset, s.size, s.nextOffset, s.maxTimestamp, s.offsetOfMaxTimestamp, s.firstBatchTimestamp,
			s.bytesSinceLastIndexEntry, s.offsetIndex.entries, s.timeIndex.entries, s.offsetIndex.writable, s.timeIndex.writable}
	}
	return out
}

// shutdownStateRoundTrip closes l, encodes and decodes its ShutdownState, and returns it.
func shutdownStateRoundTrip(t *testing.T, l *Log) *ShutdownState {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	st, ok := l.ShutdownState()
	if !ok {
		t.Fatal("no shutdown state after a clean close")
	}
	got, err := ParseShutdownState(AppendShutdownState(nil, st))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, st) {
		t.Fatalf("decoded %+v, encoded %+v", got, st)
	}
	return &got
}

// TestOpenFromShutdownState: a log of several segments and leader epochs, closed cleanly,
// is opened again from its description without a file opened, and holds what a
// listing open of the same directory holds: segments, indexes, epochs, records; it
// appends, and a later listing open finds everything. A description that does not fit
// the checkpoints' recovery point or log start, or the cleanup policy, is not used.
func TestOpenFromShutdownState(t *testing.T) {
	cfg := epochTestConfig()
	fc := NewFileCache(8)
	l, dir := openTestLog(t, cfg, OpenOptions{Files: fc})
	appendEpochs(t, l, 1, 1, 2, 2, 2, 4, 4, 4, 4, 4, 7, 7, 7)
	if len(l.segments) < 3 {
		t.Fatalf("%d segments, want several", len(l.segments))
	}
	if err := l.AdvanceLogStartOffset(7); err != nil {
		t.Fatal(err)
	}
	if err := l.LeaderEpochs().AssignLeaderStart(9, l.LogEndOffset()); err != nil { // no record in it
		t.Fatal(err)
	}
	st := shutdownStateRoundTrip(t, l)
	end, start := l.LogEndOffset(), l.LogStartOffset()
	if st.LogEndOffset() != end {
		t.Fatalf("state's log end offset %d, log's %d", st.LogEndOffset(), end)
	}

	listed, rep, err := Open(dir, cfg, OpenOptions{Files: fc, CleanShutdown: true, RecoveryPoint: end, LogStartOffset: start})
	if err != nil {
		t.Fatal(err)
	}
	if rep.FromShutdownState {
		t.Fatal("a listing open reports a shutdown state")
	}
	want, wantEpochs, wantRecords := loadedStates(listed), listed.LeaderEpochs().Entries(), readAll(t, listed)
	if err := listed.Close(); err != nil {
		t.Fatal(err)
	}

	// The directory is moved away while the log is opened from its description: Open
	// reads nothing in it.
	away := dir + ".away"
	if err := os.Rename(dir, away); err != nil {
		t.Fatal(err)
	}
	opts := OpenOptions{Files: fc, CleanShutdown: true, RecoveryPoint: end, LogStartOffset: start, ShutdownState: st}
	l, rep, err = Open(dir, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(away, dir); err != nil {
		t.Fatal(err)
	}
	if !rep.FromShutdownState || rep.SegmentsOpened != 0 || rep.SegmentsLoaded != len(want) || fc.Stats().Open != 0 {
		t.Fatalf("open from the shutdown state: %+v, %d segments open; want none", rep, fc.Stats().Open)
	}
	if got := loadedStates(l); !reflect.DeepEqual(got, want) {
		t.Fatalf("segments from the shutdown state:\n%+v\nfrom the files:\n%+v", got, want)
	}
	if got := l.LeaderEpochs().Entries(); !reflect.DeepEqual(got, wantEpochs) {
		t.Fatalf("epochs from the shutdown state %v, from the files %v", got, wantEpochs)
	}
	if l.LogStartOffset() != start || l.LogEndOffset() != end || l.RecoveryPoint() != end {
		t.Fatalf("offsets [%d, %d) recovery point %d, want [%d, %d) and %d", l.LogStartOffset(), l.LogEndOffset(), l.RecoveryPoint(), start, end, end)
	}
	if got := readAll(t, l); !reflect.DeepEqual(got, wantRecords) {
		t.Fatalf("read %d batches from the shutdown state, %d from the files", len(got), len(wantRecords))
	}
	appendEpochs(t, l, 9, 9)
	l, rep = reopen(t, l, dir, cfg, OpenOptions{Files: fc, LogStartOffset: start}) // a listing open, as after a crash
	if rep.Cut != nil || rep.FromShutdownState || l.LogEndOffset() != end+10 {
		t.Fatalf("after appending: %+v, log end %d, want %d", rep, l.LogEndOffset(), end+10)
	}
	if got := readAll(t, l); len(got) != len(wantRecords)+2 || !bytes.Equal(got[0], wantRecords[0]) {
		t.Fatalf("read %d batches, want %d", len(got), len(wantRecords)+2)
	}
	checkEpochs(t, "after appending", l.LeaderEpochs(), dir, append(wantEpochs, EpochEntry{9, end}))

	st = shutdownStateRoundTrip(t, l)
	for _, tc := range []struct {
		name string
		opts OpenOptions
		cfg  Config
	}{
		{"another recovery point", OpenOptions{RecoveryPoint: st.LogEndOffset() - 1, LogStartOffset: start}, cfg},
		{"another log start", OpenOptions{RecoveryPoint: st.LogEndOffset(), LogStartOffset: start + 1}, cfg},
		{"without the clean shutdown", OpenOptions{RecoveryPoint: st.LogEndOffset(), LogStartOffset: start}, cfg},
		{"another cleanup policy", OpenOptions{RecoveryPoint: st.LogEndOffset(), LogStartOffset: start}, func() Config { c := cfg; c.Compacted = true; return c }()},
	} {
		tc.opts.Files, tc.opts.ShutdownState = fc, st
		tc.opts.CleanShutdown = tc.name != "without the clean shutdown"
		nl, rep, err := Open(dir, tc.cfg, tc.opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if rep.FromShutdownState || nl.LogEndOffset() != st.LogEndOffset() {
			t.Fatalf("%s: %+v, log end %d", tc.name, rep, nl.LogEndOffset())
		}
		if err := nl.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestShutdownStateOnlyAfterACleanClose: an open log, a failed one and a new log never
// written to have no shutdown state.
func TestShutdownStateOnlyAfterACleanClose(t *testing.T) {
	cfg := smallConfig()
	fc := NewFileCache(8)
	l, _ := openTestLog(t, cfg, OpenOptions{Files: fc})
	if _, ok := l.ShutdownState(); ok {
		t.Fatal("an open log has a shutdown state")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.ShutdownState(); ok {
		t.Fatal("a log never written to has a shutdown state")
	}
	l, _ = openTestLog(t, cfg, OpenOptions{Files: fc})
	appendN(t, l, 2, batchSpec{records: 2, valueSize: 10}, 0)
	l.MarkFailed("test", errShutdownState)
	l.Close()
	if _, ok := l.ShutdownState(); ok {
		t.Fatal("a failed log has a shutdown state")
	}
}

// FuzzParseShutdownState: any bytes decode to an error or to a description that encodes
// and decodes to itself; none panics or allocates beyond its input's size.
func FuzzParseShutdownState(f *testing.F) {
	f.Add(AppendShutdownState(nil, ShutdownState{segments: []segmentState{{baseOffset: 0, size: 100, nextOffset: 5, offsetIndexEntries: 1}},
		epochs: []EpochEntry{{1, 0}, {3, 2}}, txnIndexAbsent: true}))
	f.Add(AppendShutdownState(nil, ShutdownState{segments: []segmentState{{baseOffset: 0, size: 100, nextOffset: 5}, {baseOffset: 5}}, logStartOffset: 3}))
	f.Add(AppendShutdownState(nil, ShutdownState{segments: []segmentState{{baseOffset: 7, size: 70, nextOffset: 9}}, logStartOffset: 7,
		otherFiles: []string{"00000000000000000007.snapshot"}, otherFilesSet: true, ownerData: []byte{1, 2, 3}}))
	f.Add([]byte{shutdownStateVersion, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := ParseShutdownState(b)
		if err != nil {
			return
		}
		again, err := ParseShutdownState(AppendShutdownState(nil, st))
		if err != nil || !reflect.DeepEqual(again, st) {
			t.Fatalf("re-encoded %+v decodes to %+v, %v", st, again, err)
		}
	})
}

// TestShutdownStateKnowsWhetherATxnIndexExists: appends leave a log without transaction
// index files known to have none (its description says so, and an open from it reads
// none); an aborted transaction makes one, which the description then names, and the
// open from it reads it back.
func TestShutdownStateKnowsWhetherATxnIndexExists(t *testing.T) {
	cfg := epochTestConfig()
	fc := NewFileCache(8)
	l, dir := openTestLog(t, cfg, OpenOptions{Files: fc})
	hasTxnIndex := func() bool {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), TxnIndexFileSuffix) {
				return true
			}
		}
		return false
	}
	appendEpochs(t, l, 1, 1, 1, 1, 1, 1, 1, 1)
	st := shutdownStateRoundTrip(t, l)
	if !st.txnIndexAbsent || hasTxnIndex() {
		t.Fatalf("after appends: described absent %v, a file exists %v", st.txnIndexAbsent, hasTxnIndex())
	}
	open := func(st *ShutdownState) *Log {
		l, rep, err := Open(dir, cfg, OpenOptions{Files: fc, CleanShutdown: true, RecoveryPoint: st.LogEndOffset(), ShutdownState: st})
		if err != nil || !rep.FromShutdownState {
			t.Fatalf("open from the description: %+v, %v", rep, err)
		}
		return l
	}
	l = open(st)
	aborted := AbortedTxn{ProducerID: 9, FirstOffset: 1, LastOffset: l.LogEndOffset() - 1}
	if err := l.AppendAbortedTxns([]AbortedTxn{aborted}); err != nil {
		t.Fatal(err)
	}
	st = shutdownStateRoundTrip(t, l)
	if st.txnIndexAbsent || !hasTxnIndex() {
		t.Fatalf("after an aborted transaction: described absent %v, a file exists %v", st.txnIndexAbsent, hasTxnIndex())
	}
	l = open(st)
	defer l.Close()
	if got, err := l.AbortedTxns(); err != nil || len(got) != 1 || got[0].ProducerID != 9 {
		t.Fatalf("aborted transactions after the open from the description: %v, %v", got, err)
	}
}

// TestShutdownStateOfACompactedLogWithAnEmptySegment: cleaning can empty a group of a
// compacted log's segments, leaving an empty segment before the last; its description
// is a log's like any other.
func TestShutdownStateOfACompactedLogWithAnEmptySegment(t *testing.T) {
	st := ShutdownState{compacted: true, segments: []segmentState{
		{baseOffset: 0, size: 100, nextOffset: 4},
		{baseOffset: 10, nextOffset: 10},
		{baseOffset: 20, size: 100, nextOffset: 25},
	}}
	if _, err := ParseShutdownState(AppendShutdownState(nil, st)); err != nil {
		t.Fatalf("an empty segment before the last: %v", err)
	}
	st.segments[1].baseOffset, st.segments[1].nextOffset = 0, 0
	if _, err := ParseShutdownState(AppendShutdownState(nil, st)); err == nil {
		t.Fatal("two segments at one base offset read as a log")
	}
}

// TestShutdownStateFileChangedWhileStopped: a segment file cut short or extended after
// the clean close no longer fits the description. The open from the description does
// not look (it reads no file), but the file's first open does, and so does the owner's
// check of UncheckedFiles: the log is marked damaged (ErrLogDamaged, not a failed
// write), refuses appends, and writes nothing into the file. Opened again from its
// files, recovery cuts the torn batch and every whole batch before it reads back. A
// file of the described size opens, passes the check and appends.
func TestShutdownStateFileChangedWhileStopped(t *testing.T) {
	for _, tc := range []struct{ change, foundBy string }{
		{"cut short", "first open"}, {"extended", "first open"}, {"cut short", "check"}, {"extended", "check"},
	} {
		change := tc.change
		t.Run(strings.ReplaceAll(change+" "+tc.foundBy, " ", "-"), func(t *testing.T) {
			cfg := epochTestConfig()
			fc := NewFileCache(8)
			l, dir := openTestLog(t, cfg, OpenOptions{Files: fc})
			appendEpochs(t, l, 1, 1, 2, 2, 2, 4, 4)
			wantRecords := readAll(t, l)
			st := shutdownStateRoundTrip(t, l)
			end := l.LogEndOffset()
			active := st.segments[len(st.segments)-1]
			path := segmentPath(dir, active.baseOffset, LogFileSuffix)
			size := active.size - 3 // into the last batch
			if change == "extended" {
				size = active.size + 100
			}
			if err := os.Truncate(path, size); err != nil {
				t.Fatal(err)
			}
			opts := OpenOptions{Files: fc, CleanShutdown: true, RecoveryPoint: end, ShutdownState: st}
			l, rep, err := Open(dir, cfg, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.FromShutdownState || l.Failure() != nil {
				t.Fatalf("opened as %+v, failure %v; want the description's open, not yet failed", rep, l.Failure())
			}
			if tc.foundBy == "check" {
				if errs := checkFiles(t, l); len(errs) != 1 || !errors.Is(errs[0], ErrLogDamaged) {
					t.Fatalf("the check of %d segments: %v; want the changed one's ErrLogDamaged", len(st.segments), errs)
				}
			}
			_, err = l.AppendAsLeader(makeBatch(t, epochSpec), 4)
			if !errors.Is(err, ErrLogDamaged) || errors.Is(err, ErrLogFailed) {
				t.Fatalf("append to a changed file: %v; want ErrLogDamaged (not ErrLogFailed)", err)
			}
			if !errors.Is(l.Failure(), ErrLogDamaged) {
				t.Fatalf("failure %v; want ErrLogDamaged, sticky", l.Failure())
			}
			if _, err := l.Read(active.baseOffset, 1, end); !errors.Is(err, ErrLogDamaged) {
				t.Fatalf("read of the changed segment: %v; want ErrLogDamaged", err)
			}
			l.Close()
			if fi, err := os.Stat(path); err != nil || fi.Size() != size {
				t.Fatalf("the changed file after the damaged log: %v, %v; want %d bytes, untouched", fi, err, size)
			}

			opts.ShutdownState = nil
			l, rep, err = Open(dir, cfg, opts)
			if err != nil {
				t.Fatal(err)
			}
			got := readAll(t, l)
			switch change {
			case "cut short":
				if rep.Cut == nil || l.LogEndOffset() >= end || len(got) != len(wantRecords)-1 {
					t.Fatalf("opened from the files as %+v, log end %d of %d, %d batches; want the torn batch cut", rep, l.LogEndOffset(), end, len(got))
				}
			case "extended":
				if l.LogEndOffset() != end || len(got) != len(wantRecords) {
					t.Fatalf("opened from the files as %+v, log end %d of %d, %d batches; want every batch", rep, l.LogEndOffset(), end, len(got))
				}
			}
			if !reflect.DeepEqual(got, wantRecords[:len(got)]) {
				t.Fatal("the whole batches read back changed")
			}
			appendEpochs(t, l, 4) // after the last whole batch: no hole
			if after := readAll(t, l); len(after) != len(got)+1 || !reflect.DeepEqual(after[:len(got)], got) {
				t.Fatalf("%d batches after an append to %d", len(after), len(got))
			}
			st = shutdownStateRoundTrip(t, l)
			l, rep, err = Open(dir, cfg, OpenOptions{Files: fc, CleanShutdown: true, RecoveryPoint: st.LogEndOffset(), ShutdownState: st})
			if err != nil {
				t.Fatal(err)
			}
			n := len(l.UncheckedFiles())
			if errs := checkFiles(t, l); len(errs) != 0 || n != len(st.segments) {
				t.Fatalf("the check of %d files of the described size: %v, of %d segments", n, errs, len(st.segments))
			}
			appendEpochs(t, l, 4)
			if left := len(l.UncheckedFiles()); left != n-1 {
				t.Fatalf("%d segments unopened after an append to the active one, want %d", left, n-1)
			}
			if !rep.FromShutdownState || l.Failure() != nil {
				t.Fatalf("a file of the described size opened as %+v, failure %v", rep, l.Failure())
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// checkFiles stats each of l's UncheckedFiles, as the broker does, and returns
// CheckFileSize's errors.
func checkFiles(t *testing.T, l *Log) []error {
	t.Helper()
	var errs []error
	for _, f := range l.UncheckedFiles() {
		fi, err := os.Stat(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.CheckFileSize(f, fi.Size()); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// TestShutdownStateIndexDeletedWhileStopped: an index file the description says holds
// entries, deleted after the clean close, is not created empty at the segment's first
// open (it would be trusted, and every lookup below the new entries would scan the
// segment): the log is marked damaged, and its reopening from its files rebuilds the
// index with every entry it had.
func TestShutdownStateIndexDeletedWhileStopped(t *testing.T) {
	for _, suffix := range []string{IndexFileSuffix, TimeIndexFileSuffix} {
		t.Run(suffix, func(t *testing.T) {
			cfg := epochTestConfig()
			cfg.SegmentBytes = 1 << 20 // one segment
			cfg.IndexIntervalBytes = 1 // an entry for every batch after the first
			fc := NewFileCache(8)
			l, dir := openTestLog(t, cfg, OpenOptions{Files: fc})
			appendEpochs(t, l, 1, 1, 2, 2, 2, 4, 4)
			wantRecords := readAll(t, l)
			st := shutdownStateRoundTrip(t, l)
			active := st.segments[len(st.segments)-1]
			path := segmentPath(dir, active.baseOffset, suffix)
			before, err := os.ReadFile(path)
			if err != nil || len(before) == 0 {
				t.Fatalf("the index before the damage: %d bytes, %v; want entries", len(before), err)
			}
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			opts := OpenOptions{Files: fc, CleanShutdown: true, RecoveryPoint: st.LogEndOffset(), ShutdownState: st}
			l, _, err = Open(dir, cfg, opts)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.AppendAsLeader(makeBatch(t, epochSpec), 4); !errors.Is(err, ErrLogDamaged) {
				t.Fatalf("append with the index deleted: %v; want ErrLogDamaged", err)
			}
			l.Close()
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the deleted index after the damaged log: %v; want it still missing", err)
			}
			opts.ShutdownState = nil
			l, rep, err := Open(dir, cfg, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(rep.IndexesRebuilt, active.baseOffset) || !reflect.DeepEqual(readAll(t, l), wantRecords) {
				t.Fatalf("reopened from the files as %+v; want segment %d's indexes rebuilt and every batch", rep, active.baseOffset)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, before) {
				t.Fatalf("the rebuilt index: %d bytes, %v; want the %d it had", len(after), err, len(before))
			}
		})
	}
}

// TestShutdownStateSealedFileChangedWhileStopped: the first segment's .log, deleted or
// cut short after the clean close, is found by whichever reads it first without having
// opened it (a read through the log, the owner's check, the cleaner's plan, tiered
// storage's CheckSegmentFiles): the log is damaged (ErrLogDamaged), never failed
// (ErrLogFailed would take the whole log directory offline).
func TestShutdownStateSealedFileChangedWhileStopped(t *testing.T) {
	for _, change := range []string{"deleted", "cut short"} {
		for _, reader := range []string{"read", "check", "clean", "tiered copy"} {
			t.Run(strings.ReplaceAll(change+" "+reader, " ", "-"), func(t *testing.T) {
				cfg := epochTestConfig()
				fc := NewFileCache(8)
				l, dir := openTestLog(t, cfg, OpenOptions{Files: fc})
				appendEpochs(t, l, 1, 1, 2, 2, 2, 4, 4)
				st := shutdownStateRoundTrip(t, l)
				first := st.segments[0]
				path := segmentPath(dir, first.baseOffset, LogFileSuffix)
				var err error
				if change == "deleted" {
					err = os.Remove(path)
				} else {
					err = os.Truncate(path, first.size-3)
				}
				if err != nil {
					t.Fatal(err)
				}
				l, _, err = Open(dir, cfg, OpenOptions{Files: fc, CleanShutdown: true, RecoveryPoint: st.LogEndOffset(), ShutdownState: st})
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				switch reader {
				case "read":
					_, err = l.Read(first.baseOffset, 1, l.LogEndOffset())
				case "check":
					size := int64(-1)
					if fi, statErr := os.Stat(path); statErr == nil {
						size = fi.Size()
					}
					err = l.CheckFileSize(DescribedFile{BaseOffset: first.baseOffset, Path: path}, size)
				case "clean":
					_, err = l.PrepareClean(CleanOptions{UncleanableOffset: l.LogEndOffset(), MaxMapBytes: 1 << 20})
				case "tiered copy":
					err = l.CheckSegmentFiles(first.baseOffset)
				}
				if !errors.Is(err, ErrLogDamaged) || errors.Is(err, ErrLogFailed) || !errors.Is(l.Failure(), ErrLogDamaged) {
					t.Fatalf("%s: %v, failure %v; want ErrLogDamaged, not ErrLogFailed, sticky", reader, err, l.Failure())
				}
			})
		}
	}
}
