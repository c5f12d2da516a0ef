package integration

// A leader asks for no ISR change adding a fenced follower (Kafka's
// isReplicaIsrEligible), and asks again once the follower is unfenced, without waiting
// for a write to the partition.

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestISRTakesBackAnUnfencedFollowerWithoutAWrite cuts a follower's Kafka link to the
// controller alone: its heartbeats stop, while it keeps its metadata (Raft) and keeps
// fetching from its leader, caught up, as the controller fences it and takes it out of
// the ISR. The leader asks nothing for it while it is fenced (no refused ISR change
// counted, even after a follower fetch at the log end in its name), and once the cut
// heals and the follower is unfenced, it joins the ISR again with no record written
// after the cut: its fetches find the partition idle, so the unfencing itself must make
// the leader ask.
func TestISRTakesBackAnUnfencedFollowerWithoutAWrite(t *testing.T) {
	t.Parallel()
	const topic = "unfenced"
	c := StartCluster(t, 3)
	ctrl := c.Controller()
	var others []int
	for i := range 3 {
		if i != ctrl {
			others = append(others, i)
		}
	}
	leader, follower := others[0], others[1]
	id := int32(follower)
	createAssignedTopic(t, c, topic, []int32{int32(leader), id, int32(ctrl)}, nil)
	waitAssignedReplicas(t, c, topic, leader, follower)
	waitFullISR(t, c, topic)
	for range 3 {
		if code := produceTo(t, c, leader, topic, -1); code != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(code))
		}
	}
	waitFullISR(t, c, topic)
	end := mustReplicaLEO(t, c, leader, topic, 0)
	epoch := c.Node(follower).BrokerEpoch()

	c.CutLink(follower, ctrl, KafkaOnly)
	t.Cleanup(c.Heal)
	testwait.For(t, 30*time.Second, func() error {
		br := c.Node(leader).Image().Brokers[id]
		if br == nil || !br.Fenced {
			return fmt.Errorf("broker %d not fenced in node-%d's image yet", id, leader)
		}
		if isr := mustPartitionIn(t, c, leader, topic, 0).ISR; slices.Contains(isr, id) {
			return fmt.Errorf("isr still %v", isr)
		}
		return nil
	})
	before := failedISRUpdates(t, c, leader)
	// Read while the leader holds it fenced: the leader decides as it reads.
	followerFetchAtLogEnd(t, c, leader, topic, id, epoch)

	c.Heal()
	testwait.For(t, 30*time.Second, func() error {
		if isr := mustPartitionIn(t, c, leader, topic, 0).ISR; !slices.Contains(isr, id) {
			return fmt.Errorf("isr %v: broker %d not back", isr, id)
		}
		return nil
	})
	if n := failedISRUpdates(t, c, leader); n != before {
		t.Fatalf("the leader asked for fenced broker %d: %v refused ISR changes, %v before", id, n, before)
	}
	if got := mustReplicaLEO(t, c, leader, topic, 0); got != end {
		t.Fatalf("log end moved from %d to %d: the test wrote after the cut", end, got)
	}
	if br := c.Node(leader).Image().Brokers[id]; br.Epoch != epoch {
		t.Fatalf("broker %d registered again (epoch %d, was %d)", id, br.Epoch, epoch)
	}
}
