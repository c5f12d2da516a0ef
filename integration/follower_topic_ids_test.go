package integration

// Followers fetch each replica under its own topic's id (Fetch v15): when a topic is
// deleted, and again when it is re-created under its name, the leader's fetch sessions
// of its followers let go of the old id's partitions, instead of answering them with
// UNKNOWN_TOPIC_ID or INCONSISTENT_TOPIC_ID at once on every fetch for ever.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
)

// TestFollowerSessionsLetGoOfADeletedTopicsID deletes one of two topics led by node 0
// and re-creates it: the partitions node 0's follower sessions hold go from four (two
// followers, two topics) to two, then back to four, the re-created topic in sync.
func TestFollowerSessionsLetGoOfADeletedTopicsID(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3)
	for _, topic := range []string{"kept", "again"} {
		createAssignedTopic(t, c, topic, []int32{0, 1, 2}, nil)
		waitAssignedReplicas(t, c, topic, 0, 2)
	}
	waitFullISR(t, c, "kept", "again")
	cached := func(want float64) func() error {
		return func() error {
			got := metricSum(c.scrapeNode(t, 0), "kafka_server_fetchsessioncache_numincrementalfetchpartitionscached", nil)
			if got != want {
				return fmt.Errorf("node-0's fetch sessions hold %v partitions, want %v", got, want)
			}
			return nil
		}
	}
	testwait.For(t, 20*time.Second, cached(4))

	ctx, cancel := context.WithTimeout(testContext(t), 30*time.Second)
	defer cancel()
	if resp, err := c.Admin(t).DeleteTopics(ctx, "again"); err != nil || resp.Error() != nil {
		t.Fatalf("delete: %v %v", err, resp.Error())
	}
	testwait.For(t, 20*time.Second, cached(2))

	createAssignedTopic(t, c, "again", []int32{0, 1, 2}, nil)
	waitAssignedReplicas(t, c, "again", 0, 2)
	waitFullISR(t, c, "again")
	testwait.For(t, 20*time.Second, cached(4))
	if code := produceTo(t, c, 0, "again", -1); code != 0 {
		t.Fatalf("acks=all to the re-created topic: error %d", code)
	}
}
