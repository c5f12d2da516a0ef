package integration

// KIP-903: a follower's fetches carry the broker epoch of the incarnation that sent
// them (Fetch v15), the leader names that epoch for the follower when it asks the
// controller to add it to the ISR (AlterPartition v3), and a member registered at
// another epoch is not let in: the fetches that made it look caught up came from a
// process that is gone, whose log may since have lost what they reported. The leader
// does not ask for such a member, nor for a fenced one (Kafka's isReplicaIsrEligible);
// the controller refuses them too (controller.TestCheckISRChange).

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestISRLeavesOutAFollowerAtAnotherBrokerEpoch cuts a follower off from the other
// nodes and, while it is still registered and unfenced (its session has not expired),
// sends its leader a follower fetch at the log end in its name: with a broker epoch it
// is not registered at, the leader does not ask for it to join the ISR (Kafka's
// isReplicaIsrEligible: the controller, which would refuse it, counts no refusal); the
// same fetch with its registered epoch is let in. The replicas' own fetches are v15 and
// the ISR was full before, so the epochs they carry are the registered ones.
func TestISRLeavesOutAFollowerAtAnotherBrokerEpoch(t *testing.T) {
	t.Parallel()
	const topic = "kip903"
	c := StartCluster(t, 3,
		WithProperty("replica.lag.time.max.ms", "500"),
		// The follower cut off stays registered and unfenced for the whole test.
		WithProperty("broker.session.timeout.ms", "60000"),
	)
	createAssignedTopic(t, c, topic, []int32{0, 1, 2}, nil)
	waitAssignedReplicas(t, c, topic, 0, 2)
	waitFullISR(t, c, topic)
	if !c.SawRequest(0, int16(kmsg.Fetch), 15) {
		t.Fatal("the leader saw no Fetch v15 from its followers")
	}
	follower := 2 // not the controller, whose election would move the metadata
	if c.Controller() == follower {
		follower = 1
	}
	id := int32(follower)
	epoch := c.Node(follower).BrokerEpoch()
	c.Partition(follower, PeersOnly)
	t.Cleanup(c.Heal)
	isrOf := func() []int32 { return mustPartitionIn(t, c, 0, topic, 0).ISR }
	testwait.For(t, 30*time.Second, func() error {
		// The partition must move for the follower to fall behind.
		if code := produceTo(t, c, 0, topic, 1); code != 0 {
			return fmt.Errorf("produce: %v", kerr.ErrorForCode(code))
		}
		if isr := isrOf(); slices.Contains(isr, id) {
			return fmt.Errorf("isr still %v", isr)
		}
		return nil
	})
	if br := c.Image(0).Brokers[id]; br.Fenced || br.Epoch != epoch {
		t.Fatalf("broker %d fenced or registered again (%+v): the test needs it registered at epoch %d", id, br, epoch)
	}

	before := failedISRUpdates(t, c, 0)
	// Each round: a fetch at the wrong epoch, then one at the registered epoch. The
	// leader decides while it reads a fetch; it asks nothing while the shrink above is
	// still pending on it, hence the rounds. Had it asked on a wrong-epoch fetch, the
	// controller's refusal would be counted.
	testwait.For(t, 20*time.Second, func() error {
		followerFetchAtLogEnd(t, c, 0, topic, id, epoch-1)
		followerFetchAtLogEnd(t, c, 0, topic, id, epoch)
		if isr := isrOf(); !slices.Contains(isr, id) {
			return fmt.Errorf("isr %v: a fetch at the registered epoch did not bring broker %d back", isr, id)
		}
		return nil
	})
	if n := failedISRUpdates(t, c, 0); n != before {
		t.Fatalf("the leader asked for broker %d at broker epoch %d: %v refused ISR changes, %v before", id, epoch-1, n, before)
	}
}

// failedISRUpdates is node i's count of ISR changes the controller refused.
func failedISRUpdates(t *testing.T, c *Cluster, i int) float64 {
	t.Helper()
	return metricSum(c.scrapeNode(t, i), "kafka_server_replicamanager_failedisrupdates_total", nil)
}

// followerFetchAtLogEnd sends node leader, the leader of topic's partition 0, a
// follower's Fetch v15 in the name of replica at brokerEpoch, from the leader's log end
// offset (no session, no wait), and fails t unless the partition is answered without
// error.
func followerFetchAtLogEnd(t *testing.T, c *Cluster, leader int, topic string, replica int32, brokerEpoch int64) {
	t.Helper()
	im := c.Node(leader).Image()
	tp := im.Topic(topic)
	if tp == nil {
		t.Fatalf("node-%d does not know %s", leader, topic)
	}
	req := kmsg.NewPtrFetchRequest()
	req.Version = 15
	req.ReplicaState.ID, req.ReplicaState.Epoch = replica, brokerEpoch
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 0, 1<<20
	req.SessionID, req.SessionEpoch = 0, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.TopicID = tp.ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 0, mustReplicaLEO(t, c, leader, topic, 0), 1<<20
	rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = tp.Partitions[0].LeaderEpoch, -1, 0
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), wireTimeout)
	defer cancel()
	resp, err := requestAt(ctx, c, leader, req)
	if err != nil {
		t.Fatal(err)
	}
	fr := resp.(*kmsg.FetchResponse)
	if fr.ErrorCode != 0 || len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 || fr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("follower fetch in the name of %d: %+v", replica, fr)
	}
}
