package broker

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// A node that is the only voter of its quorum campaigns as soon as Raft starts, at its
// first start and after a restart, instead of waiting a random 1-2 times
// controller.quorum.fetch.timeout.ms (10 s here) for a leader nobody else could be.
func TestSoleVoterElectsAtOnce(t *testing.T) {
	dir := t.TempDir()
	start := func() *Broker {
		t.Helper()
		b, err := Start(Config{
			NodeID: 0, DataDir: dir, Listen: "127.0.0.1:0", RaftListen: "127.0.0.1:0",
			Properties: map[string]string{"controller.quorum.fetch.timeout.ms": "10000"},
			Logger:     hclog.New(&hclog.LoggerOptions{Output: newTestLogWriter(t, "node-0 "), Level: hclog.Info}),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Shutdown(context.Background()) })
		// Far below the 10-20 s hashicorp/raft would wait before campaigning.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := b.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
		return b
	}
	b := start()
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	start()
}
