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
