package broker

import (
	"context"
	"testing"
	"time"
)

// Shutdown is bounded by its context even while the reconciler is still opening a large
// topic's partitions (it used to finish all of them first: 11-14 s for 3000).
func TestShutdownBoundedWhileCreatingPartitions(t *testing.T) {
	b := startTestBroker(t, "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	// The create may time out waiting for the replicas; committing is what matters.
	newAdmin(t, b).CreateTopic(ctx, 3000, 1, nil, "big")
	sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer scancel()
	start := time.Now()
	b.Shutdown(sctx)
	// A generous bound on a contract (shutdown honours its context), not a speed claim.
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("Shutdown with a 2s context took %s", took)
	}
}
