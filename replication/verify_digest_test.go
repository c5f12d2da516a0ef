package replication

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDigestsCommittedBytes: a replica digests only below its high watermark; a byte
// flipped in a batch's records on disk (its stored CRC unchanged) changes that batch's
// digest and no other; chunks are cut by size alone, so the same range digests the same.
func TestDigestsCommittedBytes(t *testing.T) {
	p, dir := newPartition(t, false)
	if err := p.BecomeLeaderOf(1, 0, []int32{0, 1}, []int32{0, 1}); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if _, err := p.AppendAsLeader(batch(3), 0); err != nil {
			t.Fatal(err)
		}
	}
	if d, err := p.Digests(0, 100, 1, 1<<20, 100); err != nil || len(d.Chunks) != 0 || d.Next != 0 {
		t.Fatalf("digests with the HW at 0: %+v %v, want none", d, err)
	}
	p.UpdateISROf(0, []int32{0}) // the HW moves to the log end, 12
	before, err := p.Digests(0, 100, 1, 1<<20, 100)
	if err != nil || len(before.Chunks) != 4 || before.Next != 12 || before.HighWatermark != 12 {
		t.Fatalf("digests: %+v %v, want a chunk per batch to 12", before, err)
	}
	whole, err := p.Digests(0, 100, 1<<20, 1<<20, 100)
	if err != nil || len(whole.Chunks) != 1 || !whole.Chunks[0].Cut || whole.Chunks[0].Batches != 4 {
		t.Fatalf("one chunk: %+v %v", whole, err)
	}
	if c := CompareDigests(0, before, before); c.Diverged || c.Agreed != 12 {
		t.Fatalf("a replica against itself: %+v", c)
	}

	// Flip a byte in the records of the third batch (offsets 6-8).
	seg := filepath.Join(dir, "00000000000000000000.log")
	raw, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	size := len(raw) / 4
	raw[2*size+62] ^= 0x01
	if err := os.WriteFile(seg, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	after, err := p.Digests(0, 100, 1, 1<<20, 100)
	if err != nil || len(after.Chunks) != 4 {
		t.Fatalf("digests after the flip: %+v %v", after, err)
	}
	c := CompareDigests(0, before, after)
	if !c.Diverged || c.From != 6 || c.To != 8 || c.Agreed != 6 {
		t.Fatalf("after the flip: %+v, want a divergence in 6-8", c)
	}
}

// TestDigestsDamagedHeader: a byte flipped in a committed batch's header on disk (its
// magic or its length) is ErrDigestCorrupt naming the offset read, not a short answer
// that looks like agreement, and never a loop.
func TestDigestsDamagedHeader(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   int // byte of the third batch's header
		mask byte
	}{{"magic", 16, 0x07}, {"length", 8, 0x40}, {"length shorter", 11, 0xff}} {
		t.Run(tc.name, func(t *testing.T) {
			p, dir := newPartition(t, false)
			if err := p.BecomeLeaderOf(1, 0, []int32{0}, []int32{0}); err != nil {
				t.Fatal(err)
			}
			for range 4 {
				if _, err := p.AppendAsLeader(batch(3), 0); err != nil {
					t.Fatal(err)
				}
			}
			if d, err := p.Digests(0, 100, 1, 1<<20, 100); err != nil || d.Next != 12 {
				t.Fatalf("digests before: %+v %v", d, err)
			}
			seg := filepath.Join(dir, "00000000000000000000.log")
			raw, err := os.ReadFile(seg)
			if err != nil {
				t.Fatal(err)
			}
			raw[2*(len(raw)/4)+tc.at] ^= tc.mask
			if err := os.WriteFile(seg, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			d, err := p.Digests(0, 100, 1, 1<<20, 100)
			if !errors.Is(err, ErrDigestCorrupt) || !strings.Contains(err.Error(), "at offset") {
				t.Fatalf("digests after the flip: %+v %v, want ErrDigestCorrupt", d, err)
			}
		})
	}
}
