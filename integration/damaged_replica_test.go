package integration

// A follower's files damaged while it is stopped (reliability.md T8): its log cut
// short, or its indexes deleted. The restart finds the damage (the clean close's
// description no longer fits the files, so the log is recovered from them), repairs it
// by cutting the torn batch and fetching the rest again from the leader, and the
// replicas agree afterwards.

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

func TestDamagedFollowerRecoversAndRefetches(t *testing.T) {
	for _, damage := range []string{"log cut short", "indexes deleted"} {
		t.Run(strings.ReplaceAll(damage, " ", "-"), func(t *testing.T) {
			t.Parallel()
			c := StartCluster(t, 3)
			topic := "damaged-" + strings.ReplaceAll(damage, " ", "-")
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
			seg := filepath.Join(dir, "00000000000000000000.log")
			switch damage {
			case "log cut short":
				fi, err := os.Stat(seg)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Truncate(seg, fi.Size()-100); err != nil { // into the last batch
					t.Fatal(err)
				}
			case "indexes deleted":
				for _, name := range []string{"00000000000000000000.index", "00000000000000000000.timeindex"} {
					if err := os.Remove(filepath.Join(dir, name)); err != nil {
						t.Fatal(err)
					}
				}
			}
			c.TakeAlertLines()
			c.Restart(follower)
			produceBatches(t, cl, topic, 40, 10)
			replicasAgree("the replicas agree on [0, 50) after the restart", "[0, 50)")
			if damage == "log cut short" {
				found := false
				for _, l := range c.TakeAlertLines() {
					if strings.Contains(l, fmt.Sprintf("node-%d", follower)) && strings.Contains(l, "recovery cut a torn or corrupt log tail") && strings.Contains(l, "topic="+topic) {
						found = true
					}
				}
				if !found {
					t.Fatalf("node-%d logged no recovery cut of its shortened log", follower)
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
		})
	}
}
