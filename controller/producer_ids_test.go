package controller

import (
	"errors"
	"testing"
)

// Consecutive allocations hand out consecutive, disjoint blocks; an unknown broker or
// a stale broker epoch gets none and writes nothing.
func TestAllocateProducerIDsDecision(t *testing.T) {
	c, q := activeController(t, 0)
	ctx := testCtx(t)
	epoch := q.Image().Brokers[0].Epoch
	first, err := c.AllocateProducerIDs(ctx, 0, epoch)
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.AllocateProducerIDs(ctx, 0, epoch)
	if err != nil || second != first+ProducerIDBlockSize || q.Image().NextProducerID != second+ProducerIDBlockSize {
		t.Fatalf("blocks at %d then %d (err %v), next %d", first, second, err, q.Image().NextProducerID)
	}
	offset := q.Image().Offset
	if _, err := c.AllocateProducerIDs(ctx, 5, 0); !errors.Is(err, ErrBrokerNotRegistered) {
		t.Fatalf("unknown broker: %v", err)
	}
	if _, err := c.AllocateProducerIDs(ctx, 0, epoch+1); !errors.Is(err, ErrStaleBrokerEpoch) {
		t.Fatalf("stale epoch: %v", err)
	}
	if q.Image().Offset != offset {
		t.Fatal("a refused allocation wrote")
	}
}
