package integration

// Brokers leave: fencing moves their leaderships and drops them from every ISR, and
// topic creation counts only the brokers that are left.

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestCluster_BrokerFencing is the classic failover experiment: a topic with 4
// partitions and replication factor 3 on brokers 0, 1 and 2; broker 2 goes away. Once
// fenced (by session expiry after a crash, or by its controlled shutdown when stopped
// gracefully) every partition it led is led by the first replica in assignment order
// that is still in the ISR, with a higher leader epoch; no ISR lists 2; partitions it
// did not lead keep their leader and leader epoch. Restarted, it registers again (a new
// incarnation) and is unfenced and back in Metadata.
//
// Only what the control plane (P3) delivers is checked: rejoining the ISRs after the
// restart needs follower catch-up (P4), and is left to the replication tests.
func TestCluster_BrokerFencing(t *testing.T) {
	t.Run("kill", func(t *testing.T) { testBrokerFencing(t, true) })
	t.Run("stop", func(t *testing.T) { testBrokerFencing(t, false) })
}

func testBrokerFencing(t *testing.T, crash bool) {
	const victim = 2
	c := StartCluster(t, 3)
	c.CreateTopicRF(t, "fencing", 4, 3, nil)
	before := c.WaitConverged()
	tp := before.Topics["fencing"]
	if err := checkBalancedPlacement(tp, ids(0, 3), 3); err != nil {
		t.Fatal(err)
	}
	ctrl := c.Controller()
	oldIncarnation := before.Brokers[victim].IncarnationID

	// A crash is noticed when the session expires; if the victim was the controller,
	// the others first elect a new one, which starts every session afresh. A graceful
	// stop fences the broker before the process exits.
	var extra time.Duration
	if ctrl == victim {
		extra = failoverBound
	}
	start := time.Now()
	if crash {
		c.Kill(victim)
	} else {
		c.Stop(victim)
	}
	took := c.waitFenced(t, victim, start, extra)
	t.Logf("broker %d fenced on every live node %s after it went away (controller was node-%d)", victim, took.Round(time.Millisecond), ctrl)

	after := c.WaitConverged()
	moved := 0
	for i, p := range after.Topics["fencing"].Partitions {
		was := tp.Partitions[i]
		wantISR := without(was.ISR, victim)
		// One PartitionChange per partition: the ISR shrink, with the new leader where
		// one was needed.
		if !slices.Equal(p.ISR, wantISR) || !slices.Equal(p.Replicas, was.Replicas) || p.PartitionEpoch != was.PartitionEpoch+1 {
			t.Errorf("partition %d: now %s, was %s; expected ISR %v and one partition epoch more", i, p, was, wantISR)
			continue
		}
		if was.Leader != victim {
			if p.Leader != was.Leader || p.LeaderEpoch != was.LeaderEpoch {
				t.Errorf("partition %d: leader %d epoch %d, was %d epoch %d: a partition broker %d did not lead moved",
					i, p.Leader, p.LeaderEpoch, was.Leader, was.LeaderEpoch, victim)
			}
			continue
		}
		moved++
		want := int32(-1)
		for _, r := range was.Replicas {
			if slices.Contains(wantISR, r) {
				want = r
				break
			}
		}
		if p.Leader != want || p.LeaderEpoch != was.LeaderEpoch+1 {
			t.Errorf("partition %d: now %s, was %s; expected leader %d (first replica in the ISR) at the next leader epoch", i, p, was, want)
		}
	}
	if moved == 0 {
		t.Errorf("broker %d led none of %s: the placement is not balanced", victim, tp)
	}
	md := c.metadataVia(t, c.live()[0], []string{"fencing"}, false)
	if got := metadataBrokerIDs(md); !slices.Equal(got, []int32{0, 1}) {
		t.Errorf("Metadata brokers while %d is fenced: %v", victim, got)
	}
	for _, p := range md.Topics[0].Partitions {
		if !slices.Equal(p.OfflineReplicas, []int32{victim}) || slices.Contains(p.ISR, victim) || p.Leader == victim {
			t.Errorf("Metadata partition %d: leader %d ISR %v offline %v", p.Partition, p.Leader, p.ISR, p.OfflineReplicas)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	c.Restart(victim)
	im := c.WaitConverged()
	b := im.Brokers[victim]
	if b.Fenced || b.IncarnationID == oldIncarnation || uint64(b.Epoch) <= after.Offset {
		t.Fatalf("broker %d after the restart: %+v (old incarnation %s, fenced at offset %d)", victim, b, oldIncarnation, after.Offset)
	}
	brokers, err := c.Admin(t).BrokerMetadata(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := brokers.Brokers.NodeIDs(); !slices.Equal(got, ids(0, 3)) {
		t.Fatalf("kadm BrokerMetadata after the restart: %v", got)
	}
	// Getting back INTO the ISRs is the data plane's work (P4: the follower fetches,
	// catches up, and its leader sends AlterPartition), so this P3 test checks no ISR
	// after the restart.
}

// TestCluster_ReplicationFactorAboveLiveBrokers: with one of three brokers stopped
// (fenced), replication factor 3 is INVALID_REPLICATION_FACTOR whichever node gets the
// request, and replication factor 2 places replicas on the two live brokers only.
func TestCluster_ReplicationFactorAboveLiveBrokers(t *testing.T) {
	c := StartCluster(t, 3)
	ctrl := c.Controller()
	victim := (ctrl + 1) % 3 // not the controller: no election to wait for
	start := time.Now()
	c.Stop(victim)
	c.waitFenced(t, int32(victim), start, 0)

	// kadm's CreateTopic returns the topic's error code as its error.
	if _, err := c.Admin(t).CreateTopic(testContext(t), 3, 3, nil, "rf-too-high"); !errors.Is(err, kerr.InvalidReplicationFactor) {
		t.Fatalf("RF 3 with 2 live brokers through kadm: %v, expected INVALID_REPLICATION_FACTOR", err)
	}
	for _, i := range c.live() {
		if r := c.createTopicVia(t, i, "rf-too-high", 3, 3, nil); r.ErrorCode != kerr.InvalidReplicationFactor.Code {
			t.Fatalf("RF 3 with 2 live brokers via node-%d: %v, expected INVALID_REPLICATION_FACTOR (38)", i, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	live := without(ids(0, 3), int32(victim))
	c.CreateTopicRF(t, "rf-two", 4, 2, nil)
	im := c.WaitConverged()
	if _, ok := im.Topics["rf-too-high"]; ok {
		t.Fatalf("rf-too-high exists")
	}
	if err := checkBalancedPlacement(im.Topics["rf-two"], live, 2); err != nil {
		t.Fatal(err)
	}
}
