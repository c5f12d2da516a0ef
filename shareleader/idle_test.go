package shareleader

import (
	"slices"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/share"
)

// A share partition unused for IdleTimeout with nothing in flight is unloaded, and its
// group's metrics are forgotten (a deleted group's state does not stay in memory); one
// whose records are still locked stays until they are finished, and the next fetch
// loads the durable state again.
func TestIdleSharePartitionIsUnloaded(t *testing.T) {
	cfg := earliest
	cfg.Partition.RecordLockDurationMs = 60_000
	r := newRig(t, cfg, func(c *Config) { c.IdleTimeout = 100 * time.Millisecond })
	ctx := testCtx(t)
	r.replica.produce(3)
	if got := r.fetch(ctx, "m1", 0).acquired(); !slices.Equal(got, []string{"0-2@1"}) {
		t.Fatalf("m1 acquired %v", got)
	}
	// Held records keep it loaded: several idle periods pass, polled through Loaded.
	deadline := time.Now().Add(500 * time.Millisecond)
	testwait.Until(t, 10*time.Second, "several idle periods", func() bool {
		if r.m.Loaded() != 1 {
			t.Fatal("a share partition with locked records was unloaded")
		}
		return time.Now().After(deadline)
	})
	if _, code := r.acknowledge(ctx, "m1", 1, ack(0, 2, share.AckAccept)); code != 0 {
		t.Fatalf("acknowledge: %d", code)
	}
	testwait.Until(t, 10*time.Second, "the idle share partition unloaded and its metrics forgotten", func() bool {
		return r.m.Loaded() == 0 && len(r.m.Samples()) == 0
	})
	r.replica.produce(2)
	if got := r.fetch(ctx, "m1", 2).acquired(); !slices.Equal(got, []string{"3-4@1"}) {
		t.Fatalf("after the reload m1 acquired %v, want 3-4", got)
	}
}
