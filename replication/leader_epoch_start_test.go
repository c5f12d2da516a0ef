package replication

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/petrel-broker/petrel/segment"
)

// TestBecomeLeaderEpochInMemoryUntilAppend: a new leadership's epoch answers
// OffsetForLeaderEpoch at once, is written to leader-epoch-checkpoint only by the first
// append, and a leadership that appends nothing leaves the file as it was.
func TestBecomeLeaderEpochInMemoryUntilAppend(t *testing.T) {
	p, dir := newPartition(t, false)
	path := filepath.Join(dir, segment.LeaderEpochCheckpointFile)
	read := func() string {
		data, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return string(data)
	}
	if err := p.BecomeLeaderOf(2, 0, []int32{0}, []int32{0}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(batch(3), 1); err != nil {
		t.Fatal(err)
	}
	before := read()
	if before != "0\n1\n2 0\n" {
		t.Fatalf("checkpoint after the append of epoch 2: %q", before)
	}
	if err := p.BecomeLeaderOf(4, 0, []int32{0}, []int32{0}); err != nil {
		t.Fatal(err)
	}
	if e, end := p.EndOffsetForEpoch(4); e != 4 || end != 3 {
		t.Fatalf("EndOffsetForEpoch(4) = (%d, %d) after BecomeLeaderOf(4), want (4, 3)", e, end)
	}
	if e, end := p.EndOffsetForEpoch(2); e != 2 || end != 3 {
		t.Fatalf("EndOffsetForEpoch(2) = (%d, %d), want (2, 3)", e, end)
	}
	if got := read(); got != before {
		t.Fatalf("BecomeLeaderOf rewrote the checkpoint: %q, was %q", got, before)
	}
	if _, err := p.AppendAsLeader(batch(1), 1); err != nil {
		t.Fatal(err)
	}
	if got, want := read(), "0\n2\n2 0\n4 3\n"; got != want {
		t.Fatalf("checkpoint after the first append of epoch 4: %q, want %q", got, want)
	}
}
