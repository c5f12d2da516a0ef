package replication

import (
	"errors"
	"os"
	"testing"

	"github.com/petrel-broker/petrel/segment"
)

// TestCloseClean: a clean close of a replica with unflushed records flushes them (the
// recovery point reaches the log end), writes the producer snapshot at the log end,
// reports the offsets the checkpoints record and stops the replica; a second close
// reports the replica stopped, with the same offsets, and an idle replica closes
// without writing anything.
func TestCloseClean(t *testing.T) {
	p, dir := newLeader(t, segment.DefaultConfig()) // no fsync per append
	if _, err := p.AppendAsLeader(batch(4), 1); err != nil {
		t.Fatal(err)
	}
	if st := p.State(); st.RecoveryPoint == 4 {
		t.Fatalf("append already flushed (recovery point %d): the test needs unflushed records", st.RecoveryPoint)
	}
	off, stopped, err := p.CloseClean()
	if err != nil || stopped {
		t.Fatalf("close: stopped=%v err=%v", stopped, err)
	}
	if off != (CloseOffsets{HighWatermark: 4, RecoveryPoint: 4, LogStartOffset: 0}) {
		t.Fatalf("offsets %+v, want HW 4, recovery point 4, log start 0", off)
	}
	if _, err := os.Stat(ProducerSnapshotPath(dir, 4)); err != nil {
		t.Fatalf("no producer snapshot at the log end: %v", err)
	}
	if p.State().Role != Stopped {
		t.Fatalf("role %v after close", p.State().Role)
	}
	if got := p.CheckpointOffsets(); got != off {
		t.Fatalf("a stopped replica's checkpoint offsets %+v, want those it stopped with %+v", got, off)
	}
	if again, stopped, err := p.CloseClean(); !stopped || !errors.Is(err, ErrPartitionStopped) || again != off {
		t.Fatalf("second close: %+v stopped=%v err=%v, want ErrPartitionStopped with %+v", again, stopped, err, off)
	}

	idle, idleDir := newPartition(t, false)
	before, _ := os.ReadDir(idleDir)
	if off, stopped, err := idle.CloseClean(); err != nil || stopped || off != (CloseOffsets{}) {
		t.Fatalf("idle close: %+v stopped=%v err=%v", off, stopped, err)
	}
	if after, _ := os.ReadDir(idleDir); len(after) != len(before) {
		t.Fatalf("closing an idle replica changed its directory: %d entries, before %d", len(after), len(before))
	}
}

// TestShutdownSnapshotIsDurableWithItsDescription: a clean close that writes a producer
// snapshot fsyncs the directory after its rename, since the log's description names the
// file; a close that writes none fsyncs nothing; and when that fsync fails, the close
// reports it and the replica no longer claims to know its snapshot files.
func TestShutdownSnapshotIsDurableWithItsDescription(t *testing.T) {
	var synced []string
	var fail error
	t.Cleanup(func() { syncDir = segment.SyncDir })
	cfg := segment.DefaultConfig()
	fc := segment.NewFileCache(16)
	dir := t.TempDir()
	p, _, _ := openLeader(t, dir, cfg, segment.OpenOptions{Files: fc})
	const seq = 2 * (shutdownReplayBatches + 1) // too many batches to replay at the next open
	appendIdempotent(t, p, 0, seq)
	leo := p.State().LogEndOffset
	syncDir = func(d string) error {
		if _, err := os.Stat(ProducerSnapshotPath(dir, leo)); err != nil {
			t.Errorf("the directory fsynced before the snapshot's rename: %v", err)
		}
		synced = append(synced, d)
		return nil
	}
	off, st := closeDescribed(t, p)
	if len(synced) != 1 || synced[0] != dir {
		t.Fatalf("directory fsyncs %v at a close that wrote a snapshot, want one of %s", synced, dir)
	}
	if !knownSnapshots(t, p, "after the close") {
		t.Fatal("the snapshot files are not known after a close")
	}
	reopen := func(off CloseOffsets, st *segment.ShutdownState) *Partition {
		t.Helper()
		q, _, rep := openLeader(t, dir, cfg, segment.OpenOptions{Files: fc, CleanShutdown: true,
			RecoveryPoint: off.RecoveryPoint, LogStartOffset: off.LogStartOffset, ShutdownState: st})
		if !rep.FromShutdownState {
			t.Fatal("not opened from the description")
		}
		return q
	}

	// One batch more: the close replays rather than snapshots, and fsyncs nothing.
	synced = nil
	syncDir = func(d string) error { synced = append(synced, d); return nil }
	q := reopen(off, st)
	appendIdempotent(t, q, seq, seq+2)
	off, st = closeDescribed(t, q)
	if len(synced) != 0 {
		t.Fatalf("directory fsyncs %v at a close that wrote no snapshot", synced)
	}

	// The directory fsync fails: the close says so, and the snapshots are not known.
	r := reopen(off, st)
	appendIdempotent(t, r, seq+2, 2*seq)
	fail = errors.New("injected directory fsync failure")
	syncDir = func(string) error { return fail }
	if _, _, err := r.CloseClean(); !errors.Is(err, fail) {
		t.Fatalf("close: %v, want the directory fsync's failure", err)
	}
	if knownSnapshots(t, r, "after the failed fsync") {
		t.Fatal("the snapshot files are still known after the directory fsync failed")
	}
	if _, ok := r.ShutdownState(); ok {
		t.Fatal("a replica whose close failed is described")
	}
}
