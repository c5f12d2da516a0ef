package broker

import (
	"testing"
	"time"
)

// TestControllerWriteReachesEveryBrokerAtOnce: the followers learn the commit of the
// controller's last write from the barrier after it (raft_commit_nudge.go), not from
// hashicorp/raft's CommitTimeout tick: with that tick an hour long, a topic created
// when nothing else is written still reaches every broker's image.
func TestControllerWriteReachesEveryBrokerAtOnce(t *testing.T) {
	saved := raftCommitTimeout
	raftCommitTimeout = time.Hour
	t.Cleanup(func() { raftCommitTimeout = saved })
	c := startTestCluster(t, 3, 3, nil)
	adm := newAdmin(t, c.brokers[0])
	for _, topic := range []string{"first", "last"} {
		mustCreateTopic(t, adm, topic, 1, nil)
		deadline := time.Now().Add(20 * time.Second)
		for i, b := range c.brokers {
			for b.Image().Topic(topic) == nil {
				if time.Now().After(deadline) {
					t.Fatalf("topic %s not in broker %d's image", topic, i)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
}
