package segment

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// recordSyncDirs records every directory fsync of the test (not parallel: the hook is
// package state) as "sync <dir>" in events, after calling check.
func recordSyncDirs(t *testing.T, events *[]string, check func(dir string)) {
	testSyncDirHook = func(dir string) {
		if check != nil {
			check(dir)
		}
		*events = append(*events, "sync "+dir)
	}
	t.Cleanup(func() { testSyncDirHook = nil })
}

type rollRecorder struct {
	t      *testing.T
	l      *Log
	events *[]string
}

// BeforeRoll checks that the new segment does not exist yet and the recovery point is
// still below it, and writes a file with fsynced contents, as producer snapshots are.
func (r *rollRecorder) BeforeRoll(base int64) error {
	if _, err := os.Stat(segmentPath(r.l.dir, base, LogFileSuffix)); err == nil {
		r.t.Errorf("segment %d exists before the roll observer ran", base)
	}
	if rp := r.l.RecoveryPoint(); rp > base {
		r.t.Errorf("recovery point %d already past %d", rp, base)
	}
	if err := WriteFileSynced(filepath.Join(r.l.dir, fmt.Sprintf("%020d.snapshot", base)), []byte("state")); err != nil {
		r.t.Error(err)
	}
	*r.events = append(*r.events, fmt.Sprintf("roll %d", base))
	return nil
}

// A file the roll observer writes is renamed into place before the new segment's
// directory fsync, which the roll makes before it returns and the recovery point moves
// to the new base: no fsync of its own, durable before the recovery point passes it.
func TestRollObserverFilesAreCoveredByTheRollsDirectoryFsync(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 2 << 10
	l, dir := openTestLog(t, cfg, OpenOptions{})
	var events []string
	l.SetRollObserver(&rollRecorder{t: t, l: l, events: &events})
	recordSyncDirs(t, &events, nil)
	rolls := 0
	for i := 0; i < 20; i++ {
		events = events[:0]
		before := l.ActiveSegmentBaseOffset()
		info, err := l.AppendAsLeader(makeBatch(t, batchSpec{records: 4, valueSize: 100, seed: byte(i)}), 0)
		if err != nil {
			t.Fatal(err)
		}
		if info.SegmentBaseOffset == before {
			continue
		}
		rolls++
		roll := fmt.Sprintf("roll %d", info.SegmentBaseOffset)
		at := -1
		for j, e := range events {
			if e == roll {
				at = j
			}
		}
		if at < 0 || !slices.Contains(events[at+1:], "sync "+dir) {
			t.Fatalf("append %d: no directory fsync after the observer: %q", i, events)
		}
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("%020d.snapshot", info.SegmentBaseOffset))); err != nil {
			t.Fatal(err)
		}
		if rp := l.RecoveryPoint(); rp < info.SegmentBaseOffset {
			t.Fatalf("recovery point %d below the new segment %d", rp, info.SegmentBaseOffset)
		}
	}
	if rolls < 3 {
		t.Fatalf("%d rolls", rolls)
	}
}

// A metadata file of a new (unborn) log is written only when the first segment is born:
// no file and no fsync at creation, the whole file in place before the birth's directory
// fsync (first append or full truncation), and written at once, with a directory fsync,
// when the log already has segment files. A log closed unborn writes nothing.
func TestWriteMetadataFileWaitsForTheFirstSegment(t *testing.T) {
	want := []byte("version: 0\ntopic_id: abc\n")
	births := []struct {
		name  string
		birth func(l *Log) error
	}{
		{"first append", func(l *Log) error {
			_, err := l.AppendAsLeader(makeBatch(t, batchSpec{records: 1, valueSize: 10}), 0)
			return err
		}},
		{"full truncation", func(l *Log) error { return l.TruncateFullyAndStartAt(100) }},
	}
	for _, tc := range births {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "partition.metadata")
			l, _, err := Open(dir, smallConfig(), OpenOptions{Files: NewFileCache(4)})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if !l.Unborn() {
				t.Fatal("a new log with a file cache is not unborn")
			}
			var events []string
			expect := want // what the file holds at every fsync of its directory
			recordSyncDirs(t, &events, func(d string) {
				if d != dir {
					return
				}
				if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, expect) {
					t.Errorf("directory fsync before the file is whole: %q %v", got, err)
				}
			})
			if err := l.WriteMetadataFile(&DirFile{Name: "partition.metadata", Data: want}); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(path); err == nil || len(events) > 0 {
				t.Fatalf("written before the first segment: %v, fsyncs %q", err, events)
			}
			if err := tc.birth(l); err != nil {
				t.Fatal(err)
			}
			if len(events) == 0 || events[0] != "sync "+dir {
				t.Fatalf("fsyncs %q", events)
			}
			// Reopened without a close (a crash): born, so a rewrite is immediate.
			l2, _, err := Open(dir, smallConfig(), OpenOptions{Files: NewFileCache(4)})
			if err != nil {
				t.Fatal(err)
			}
			defer l2.Close()
			events = events[:0]
			other := []byte("version: 0\ntopic_id: def\n")
			expect = other
			if l2.Unborn() {
				t.Fatal("a log with segment files is unborn")
			}
			if err := l2.WriteMetadataFile(&DirFile{Name: "partition.metadata", Data: other}); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, other) || len(events) != 1 {
				t.Fatalf("immediate write: %q, fsyncs %q", got, events)
			}
		})
	}
	t.Run("closed unborn", func(t *testing.T) {
		dir := t.TempDir()
		l, _, err := Open(dir, smallConfig(), OpenOptions{Files: NewFileCache(4)})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.WriteMetadataFile(&DirFile{Name: "partition.metadata", Data: want}); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Fatalf("files of a log never written: %v", ents)
		}
	})
}

// SyncTxnIndex fsyncs the directory once after an append created a .txnindex (its name
// is then durable before a shutdown snapshot that recovery would trust it under), and
// does nothing when no aborted transaction was added since.
func TestSyncTxnIndexFsyncsTheDirectoryOfANewIndex(t *testing.T) {
	l, dir := openTestLog(t, smallConfig(), OpenOptions{})
	appendN(t, l, 4, batchSpec{records: 2, valueSize: 10}, 0)
	var events []string
	recordSyncDirs(t, &events, nil)
	if err := l.SyncTxnIndex(); err != nil || len(events) != 0 {
		t.Fatalf("without an aborted transaction: %v, fsyncs %q", err, events)
	}
	a := AbortedTxn{ProducerID: 5, FirstOffset: 0, LastOffset: 3, LastStableOffset: 4}
	if err := l.AppendAbortedTxns([]AbortedTxn{a}); err != nil {
		t.Fatal(err)
	}
	if err := l.SyncTxnIndex(); err != nil || !slices.Equal(events, []string{"sync " + dir}) {
		t.Fatalf("after creating the index: %v, fsyncs %q", err, events)
	}
	a.LastOffset, a.FirstOffset = 5, 4
	if err := l.AppendAbortedTxns([]AbortedTxn{a}); err != nil {
		t.Fatal(err)
	}
	if err := l.SyncTxnIndex(); err != nil || len(events) != 1 {
		t.Fatalf("after appending to an existing index: %v, fsyncs %q", err, events)
	}
}

// A new leadership's first append into a log with no directory yet, and a follower's:
// the leader epoch checkpoint is written before the first segment's birth and makes no
// directory fsync of its own; the birth's fsyncs of the partition directory and then
// the log directory come next, with the checkpoint whole under its name, before the
// record is written. An append in a later leadership, with the segment born, fsyncs
// the directory itself.
func TestFirstAppendsCheckpointIsCoveredByTheBirthsFsync(t *testing.T) {
	t.Run("follower", func(t *testing.T) {
		leader, _ := openTestLog(t, smallConfig(), OpenOptions{})
		b := makeBatch(t, batchSpec{records: 1, valueSize: 10})
		if _, err := leader.AppendAsLeader(b, 7); err != nil { // stamps b's offset and epoch
			t.Fatal(err)
		}
		f, dir := openAbsent(t)
		defer f.Close()
		var events []string
		recordSyncDirs(t, &events, func(d string) {
			if d != dir {
				return
			}
			lines, err := ReadCheckpoint(filepath.Join(dir, LeaderEpochCheckpointFile))
			if err != nil || len(lines) != 1 || lines[0] != "7 0" {
				t.Errorf("the partition directory fsynced with the checkpoint %q, %v", lines, err)
			}
			if st, err := os.Stat(segmentPath(dir, 0, LogFileSuffix)); err != nil || st.Size() != 0 {
				t.Errorf("the segment at the directory fsync: %v, %v; want it empty", st, err)
			}
		})
		if _, err := f.AppendAsFollower(b); err != nil {
			t.Fatal(err)
		}
		if want := []string{"sync " + dir, "sync " + filepath.Dir(dir)}; !slices.Equal(events, want) {
			t.Fatalf("directory fsyncs of the follower's first append %q, want %q", events, want)
		}
	})

	l, dir := openAbsent(t)
	defer l.Close()
	if err := l.LeaderEpochs().AssignLeaderStart(3, 0); err != nil {
		t.Fatal(err)
	}
	var events []string
	checkpoint := filepath.Join(dir, LeaderEpochCheckpointFile)
	recordSyncDirs(t, &events, func(d string) {
		if d != dir {
			return
		}
		if lines, err := ReadCheckpoint(checkpoint); err != nil || len(lines) != 1 || lines[0] != "3 0" {
			t.Errorf("the partition directory fsynced with the checkpoint %q, %v", lines, err)
		}
	})
	if _, err := l.AppendAsLeader(makeBatch(t, batchSpec{records: 1, valueSize: 10}), 3); err != nil {
		t.Fatal(err)
	}
	if want := []string{"sync " + dir, "sync " + filepath.Dir(dir)}; !slices.Equal(events, want) {
		t.Fatalf("directory fsyncs of the first append %q, want %q", events, want)
	}

	events = events[:0]
	if err := l.LeaderEpochs().AssignLeaderStart(4, l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	recordSyncDirs(t, &events, func(d string) {
		if lines, err := ReadCheckpoint(checkpoint); err != nil || len(lines) != 2 || lines[1] != "4 1" {
			t.Errorf("the directory fsynced with the checkpoint %q, %v", lines, err)
		}
	})
	if _, err := l.AppendAsLeader(makeBatch(t, batchSpec{records: 1, valueSize: 10}), 4); err != nil {
		t.Fatal(err)
	}
	if want := []string{"sync " + dir}; !slices.Equal(events, want) {
		t.Fatalf("directory fsyncs of a new leadership's first append %q, want %q", events, want)
	}
}

// BenchmarkFirstAppend is a replica's first write with Petrel's default fsync: a new
// leadership's first append into a log whose directory does not exist yet, and its
// fsync (the flusher's), then the close; it reports the fsyncs of directories made
// per write (the first segment's birth: the partition directory and the log directory).
func BenchmarkFirstAppend(b *testing.B) {
	parent := b.TempDir()
	fc := NewFileCache(64)
	batch := makeBatch(b, batchSpec{records: 1, valueSize: 100})
	dirSyncs := 0
	testSyncDirHook = func(string) { dirSyncs++ }
	b.Cleanup(func() { testSyncDirHook = nil })
	i := 0
	for b.Loop() {
		l, _, err := Open(filepath.Join(parent, fmt.Sprintf("t-%d", i)), DefaultConfig(), OpenOptions{Files: fc, DirAbsent: true})
		if err != nil {
			b.Fatal(err)
		}
		i++
		if err := l.LeaderEpochs().AssignLeaderStart(0, 0); err != nil {
			b.Fatal(err)
		}
		if _, err := l.AppendAsLeader(bytes.Clone(batch), 0); err != nil {
			b.Fatal(err)
		}
		if err := l.Flush(); err != nil {
			b.Fatal(err)
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(dirSyncs)/float64(i), "dirsyncs/op")
}
