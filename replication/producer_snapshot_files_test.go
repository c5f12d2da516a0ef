package replication

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/petrel-broker/petrel/segment"
)

// knownSnapshots checks that what p knows of its snapshot files is what its directory
// holds, and returns whether it knows them.
func knownSnapshots(t *testing.T, p *Partition, what string) bool {
	t.Helper()
	p.mu.Lock()
	known, offsets := p.snapshots.known, slices.Clone(p.snapshots.offsets)
	dir := p.log.Dir()
	p.mu.Unlock()
	if listed := snapshotsIn(t, dir); known && !slices.Equal(offsets, listed) {
		t.Fatalf("%s: the partition knows snapshots %v, the directory holds %v", what, offsets, listed)
	}
	return known
}

// appendIdempotent appends producer 7's batches of two records, sequences [from, to).
func appendIdempotent(t *testing.T, p *Partition, from, to int32) {
	t.Helper()
	for seq := from; seq < to; seq += 2 {
		if _, err := p.AppendAsLeader(idempotentBatch(2, 7, 0, seq), 0); err != nil {
			t.Fatal(err)
		}
	}
}

// openRollingLeader opens a new leader in a temporary directory whose segments roll
// every 2,000 bytes (a producer snapshot at each roll), with a file cache, and returns
// them for its reopens.
func openRollingLeader(t *testing.T) (*Partition, string, segment.Config, *segment.FileCache) {
	t.Helper()
	cfg := segment.DefaultConfig()
	cfg.SegmentBytes = 2000
	fc := segment.NewFileCache(16)
	dir := t.TempDir()
	p, _, _ := openLeader(t, dir, cfg, segment.OpenOptions{Files: fc})
	return p, dir, cfg, fc
}

// closeDescribed closes p cleanly and returns its checkpoint offsets and its log's
// description, encoded and decoded as the broker's file keeps it.
func closeDescribed(t *testing.T, p *Partition) (CloseOffsets, *segment.ShutdownState) {
	t.Helper()
	off, _, err := p.CloseClean()
	if err != nil {
		t.Fatal(err)
	}
	st, ok := p.ShutdownState()
	if !ok {
		t.Fatal("no shutdown state after a clean close")
	}
	st, err = segment.ParseShutdownState(segment.AppendShutdownState(nil, st))
	if err != nil {
		t.Fatal(err)
	}
	return off, &st
}

// TestShutdownStateCarriesTheSnapshots: a replica knows its producer snapshot files
// through rolls, a log start move and a clean close; its log's description carries
// them, and the next clean start rebuilds the producer state from them without listing
// the directory (a corrupt snapshot slipped in meanwhile is not seen), as a listing
// start would from the same files. A follower emptied to a new log start knows it has
// none.
func TestShutdownStateCarriesTheSnapshots(t *testing.T) {
	p, dir, cfg, fc := openRollingLeader(t)
	if !knownSnapshots(t, p, "a new replica") {
		t.Fatal("a new replica does not know its snapshots")
	}
	const seq = 200 // the next sequence after 100 batches
	appendIdempotent(t, p, 0, seq)
	if len(snapshotsIn(t, dir)) < 3 || !knownSnapshots(t, p, "after rolls") {
		t.Fatalf("after rolls: snapshots %v", snapshotsIn(t, dir))
	}
	if _, err := p.DeleteRecordsBefore(110); err != nil {
		t.Fatal(err)
	}
	if !knownSnapshots(t, p, "after the log start moved") {
		t.Fatal("the snapshots are forgotten after the log start moved")
	}
	off, st := closeDescribed(t, p)
	st.SetOwnerData(nil) // the state from the snapshot files, not from the description

	open := func(state *segment.ShutdownState) (*Partition, ProducerLoadReport, *segment.RecoveryReport) {
		t.Helper()
		return openLeader(t, dir, cfg, segment.OpenOptions{Files: fc, CleanShutdown: true,
			RecoveryPoint: off.RecoveryPoint, LogStartOffset: off.LogStartOffset, ShutdownState: state})
	}
	listed, want, _ := open(nil)
	if _, _, err := listed.CloseClean(); err != nil {
		t.Fatal(err)
	}
	// A corrupt snapshot at the log end: a listing start would try it first.
	leo := off.RecoveryPoint
	if err := os.WriteFile(ProducerSnapshotPath(dir, leo), []byte("corrupt"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, got, rep := open(st)
	if !rep.FromShutdownState || len(got.CorruptSnapshots) != 0 || got.SnapshotOffset != want.SnapshotOffset ||
		got.BatchesReplayed != want.BatchesReplayed || got.Producers != want.Producers {
		t.Fatalf("the start from the description: %+v (%+v), a listing start: %+v", got, rep, want)
	}
	if err := os.Remove(ProducerSnapshotPath(dir, leo)); err != nil {
		t.Fatal(err)
	}
	if !knownSnapshots(t, p, "after a start from the description") {
		t.Fatal("the snapshots are not known after a start from the description")
	}
	retry, err := p.AppendAsLeader(idempotentBatch(2, 7, 0, seq-2), 0)
	if err != nil || retry.FirstOffset != leo-2 || p.State().LogEndOffset != leo {
		t.Fatalf("a retry of the last batch: %+v %v, log end %d; want its offset %d again, nothing written", retry, err, p.State().LogEndOffset, leo-2)
	}

	if err := p.BecomeFollower(1, 1); err != nil {
		t.Fatal(err)
	}
	if err := p.TruncateFullyAndStartAt(leo + 100); err != nil {
		t.Fatal(err)
	}
	if !knownSnapshots(t, p, "after the follower's log was emptied") || len(snapshotsIn(t, dir)) != 0 {
		t.Fatalf("after the follower's log was emptied: snapshots %v", snapshotsIn(t, dir))
	}
	p.Stop(false)
}

// TestStartFromDescriptionWithASnapshotGone: a snapshot the log's description names but
// someone removed is passed over as if never listed: the state comes from the one
// before it and the replay, and the open does not fail.
func TestStartFromDescriptionWithASnapshotGone(t *testing.T) {
	p, dir, cfg, fc := openRollingLeader(t)
	appendIdempotent(t, p, 0, 120)
	off, st := closeDescribed(t, p)
	offs := snapshotsIn(t, dir)
	if len(offs) < 2 {
		t.Fatalf("snapshots %v: want two at least", offs)
	}
	if err := os.Remove(ProducerSnapshotPath(dir, offs[len(offs)-1])); err != nil {
		t.Fatal(err)
	}
	st.SetOwnerData(nil) // the state from the snapshot files, not from the description
	p, report, rep := openLeader(t, dir, cfg, segment.OpenOptions{Files: fc, CleanShutdown: true,
		RecoveryPoint: off.RecoveryPoint, LogStartOffset: off.LogStartOffset, ShutdownState: st})
	if !rep.FromShutdownState || report.SnapshotOffset != offs[len(offs)-2] || report.Producers != 1 {
		t.Fatalf("producer state: %+v (%+v); want the snapshot at %d and one producer", report, rep, offs[len(offs)-2])
	}
	if !knownSnapshots(t, p, "after a start with a snapshot gone") {
		t.Fatal("the snapshots are not known")
	}
}

// TestCleanStartTakesTheProducerStateFromTheDescription: a clean close keeps the
// producer state as of the log end in its log's description; the next clean start
// takes it from there, replaying nothing, and still answers a producer's retry as a
// duplicate. It leaves the next close the choice the files would have: the 30 batches
// since the log start and 40 more are too many to replay, so that close writes a
// snapshot file, which a start from the files then loads.
func TestCleanStartTakesTheProducerStateFromTheDescription(t *testing.T) {
	cfg := segment.DefaultConfig()
	fc := segment.NewFileCache(16)
	dir := t.TempDir()
	open := func(off CloseOffsets, st *segment.ShutdownState) (*Partition, ProducerLoadReport) {
		t.Helper()
		p, report, _ := openLeader(t, dir, cfg, segment.OpenOptions{Files: fc, CleanShutdown: st != nil,
			RecoveryPoint: off.RecoveryPoint, LogStartOffset: off.LogStartOffset, ShutdownState: st})
		return p, report
	}
	p, _ := open(CloseOffsets{}, nil)
	appendIdempotent(t, p, 0, 60)
	off, st := closeDescribed(t, p)
	if offs := snapshotsIn(t, dir); len(offs) != 0 {
		t.Fatalf("a close 30 batches after the log start took snapshots %v", offs)
	}

	p, report := open(off, st)
	if !report.FromShutdownState || report.BatchesReplayed != 0 || report.SnapshotOffset != 60 || report.Producers != 1 {
		t.Fatalf("the start from the description: %+v, want the state at 60 and nothing replayed", report)
	}
	retry, err := p.AppendAsLeader(idempotentBatch(2, 7, 0, 58), 0)
	if err != nil || retry.FirstOffset != 58 || p.State().LogEndOffset != 60 {
		t.Fatalf("a retry of the last batch: %+v %v, log end %d; want its offset 58 again, nothing written", retry, err, p.State().LogEndOffset)
	}
	appendIdempotent(t, p, 60, 140)
	off, _ = closeDescribed(t, p)
	if offs := snapshotsIn(t, dir); len(offs) != 1 || offs[0] != 140 {
		t.Fatalf("the close 70 batches after the log start took snapshots %v, want one at 140", offs)
	}
	p, report = open(off, nil) // from the files, as after a crash
	if report.FromShutdownState || report.SnapshotOffset != 140 || report.BatchesReplayed != 0 || report.Producers != 1 {
		t.Fatalf("the start from the files: %+v, want the snapshot at 140", report)
	}
	retry, err = p.AppendAsLeader(idempotentBatch(2, 7, 0, 138), 0)
	if err != nil || retry.FirstOffset != 138 || p.State().LogEndOffset != 140 {
		t.Fatalf("a retry of the last batch: %+v %v, log end %d; want its offset 138 again", retry, err, p.State().LogEndOffset)
	}
}

// TestNoDescribedStateWithoutTheFilesBehindIt: a producer state that did not come from
// the snapshot files and the log (a rebuild that failed and emptied it) is not kept in
// the description: the next start rebuilds it from the files (here the snapshot at the
// log end, which the close found there and did not write again).
func TestNoDescribedStateWithoutTheFilesBehindIt(t *testing.T) {
	cfg := segment.DefaultConfig()
	fc := segment.NewFileCache(16)
	dir := t.TempDir()
	p, _, _ := openLeader(t, dir, cfg, segment.OpenOptions{Files: fc})
	if _, err := p.AppendAsLeader(idempotentBatch(2, 7, 0, 0), 0); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteProducerSnapshot(); err != nil { // the close finds it there and writes none
		t.Fatal(err)
	}
	p.mu.Lock()
	p.producers, p.replay = NewProducerStates(), producerReplay{from: -1} // as afterTruncateLocked's failure leaves it
	p.mu.Unlock()
	off, st := closeDescribed(t, p)
	_, report, _ := openLeader(t, dir, cfg, segment.OpenOptions{Files: fc, CleanShutdown: true,
		RecoveryPoint: off.RecoveryPoint, LogStartOffset: off.LogStartOffset, ShutdownState: st})
	if report.FromShutdownState || report.Producers != 1 {
		t.Fatalf("the start after the emptied state: %+v, want the producer rebuilt from the files", report)
	}
}

// TestCorruptTxnIndexAtAStartFromTheDescription: when the transaction index proves
// unreadable at a start from the description, the producer state is rebuilt from the
// log start, and the replica then describes how that rebuild went, not the
// description's choice.
func TestCorruptTxnIndexAtAStartFromTheDescription(t *testing.T) {
	cfg := segment.DefaultConfig()
	fc := segment.NewFileCache(16)
	dir := t.TempDir()
	p, _, _ := openLeader(t, dir, cfg, segment.OpenOptions{Files: fc})
	appendIdempotent(t, p, 0, 10)
	p.mu.Lock()
	err := p.log.AppendAbortedTxns([]segment.AbortedTxn{{ProducerID: 99, FirstOffset: 0, LastOffset: 9}})
	p.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	off, st := closeDescribed(t, p)
	bad := make([]byte, segment.TxnIndexEntrySize)
	bad[1] = 1 // an entry of version 1
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d%s", 0, segment.TxnIndexFileSuffix)), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	p, report, _ := openLeader(t, dir, cfg, segment.OpenOptions{Files: fc, CleanShutdown: true,
		RecoveryPoint: off.RecoveryPoint, LogStartOffset: off.LogStartOffset, ShutdownState: st})
	if report.FromShutdownState || report.SnapshotOffset != -1 || report.BatchesReplayed != 5 || report.Producers != 1 {
		t.Fatalf("the start with a corrupt transaction index: %+v, want the state rebuilt from the log start", report)
	}
	p.mu.Lock()
	replay := p.replay
	p.mu.Unlock()
	if replay != (producerReplay{from: 0, batches: 5}) {
		t.Fatalf("the next close would decide from %+v, want the rebuild from the log start", replay)
	}
}
