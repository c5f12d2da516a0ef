package integration

// A follower's files damaged while it is stopped (reliability.md T8): its indexes
// deleted. The restart rebuilds them from the log, the follower fetches what it missed,
// and the replicas agree afterwards.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestFollowerWithDeletedIndexesRebuildsThem(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3)
	const topic = "damaged-indexes"
	c.CreateTopicRF(t, topic, 1, 3, nil)
	leader := partitionLeader(t, c, topic)
	cl := c.Client(t)
	produceBatches(t, cl, topic, 0, 40)
	follower := (int(leader) + 1) % 3
	bs := "--bootstrap-server=" + strings.Join(c.Addrs(), ",")
	replicasAgree := func(what string, want string) {
		t.Helper()
		testwait.ForWhat(t, 30*time.Second, what, func() error {
			code, out, stderr := petrel("verify", "replicas", bs, topic)
			if code != 0 || !strings.Contains(out, want) || !strings.Contains(out, " agree\n") {
				return fmt.Errorf("exit %d, stdout %q, stderr %q", code, out, stderr)
			}
			return nil
		})
	}
	replicasAgree("the replicas agree on [0, 40)", "[0, 40)")

	c.Stop(follower)
	dir := filepath.Join(c.nodes[follower].dir, "logs", topic+"-0")
	for _, name := range []string{"00000000000000000000.index", "00000000000000000000.timeindex"} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	c.Restart(follower)
	produceBatches(t, cl, topic, 40, 10)
	replicasAgree("the replicas agree on [0, 50) after the restart", "[0, 50)")
	for _, name := range []string{"00000000000000000000.index", "00000000000000000000.timeindex"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Fatalf("node-%d's %s after the restart: %v", follower, name, err)
		}
	}
	// Every record reads back, from the start.
	reader := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := testContext(t)
	for n := 0; n < 50; {
		fs := reader.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of 50 records", n)
		}
		n += fs.NumRecords()
	}
}
