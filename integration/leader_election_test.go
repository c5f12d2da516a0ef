package integration

// P8 leader elections: ElectLeaders (PREFERRED and UNCLEAN) through kadm and sarama,
// unclean.leader.election.enable turned on at run time, and the controller's automatic
// leader rebalance with its per-broker imbalance percentage.

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCluster_PreferredElection moves leadership off a broker (a restart), then a
// preferred election (kadm, all partitions) restores every original leader; a second
// one needs none, and sarama's ElectLeaders agrees.
func TestCluster_PreferredElection(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, WithVoters(1), WithProperty("auto.leader.rebalance.enable", "false"))
	c.CreateTopicRF(t, "pref", 6, 3, nil)
	const x = 1 // not the controller (node 0 is the only voter)
	moved := restartAndWaitISR(t, c, x, "pref")
	if moved == 0 {
		t.Fatalf("restarting node-%d moved no leadership", x)
	}
	ctx := testContext(t)
	adm := c.Admin(t)
	res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, nil)
	if err != nil {
		t.Fatalf("ElectLeaders all: %v", err)
	}
	elected := 0
	for _, ps := range res {
		for _, r := range ps {
			if r.Err != nil {
				t.Errorf("ElectLeaders all: %s-%d: %v", r.Topic, r.Partition, r.Err)
			}
			elected++
		}
	}
	if elected != moved {
		t.Errorf("ElectLeaders all answered %d partitions, want the %d that needed an election: %+v", elected, moved, res)
	}
	im := c.WaitConverged()
	for _, p := range im.Topics["pref"].Partitions {
		if p.Leader != p.Replicas[0] {
			t.Fatalf("after the preferred election: %s is not led by its first replica", p)
		}
	}
	res, err = adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"pref": {0: {}, 1: {}, 99: {}}})
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[int32]error{0: kerr.ElectionNotNeeded, 1: kerr.ElectionNotNeeded, 99: kerr.UnknownTopicOrPartition} {
		if got := res["pref"][p].Err; !errors.Is(got, want) {
			t.Errorf("ElectLeaders pref-%d again: %v, want %v", p, got, want)
		}
	}
	sres, err := saramaAdmin(t, c).ElectLeaders(sarama.PreferredElection, map[string][]int32{"pref": {2}})
	if err != nil {
		t.Fatalf("sarama ElectLeaders: %v", err)
	}
	if r := sres["pref"][2]; r == nil || r.ErrorCode != sarama.ErrElectionNotNeeded {
		t.Fatalf("sarama ElectLeaders pref-2: %+v, want ELECTION_NOT_NEEDED", r)
	}
}

// restartAndWaitISR stops and restarts node x, waits until it is back in the ISR of
// every partition of topic that it replicates, and returns how many of those it
// prefers but no longer leads.
func restartAndWaitISR(t *testing.T, c *Cluster, x int32, topic string) int {
	t.Helper()
	c.Stop(int(x))
	c.Restart(int(x))
	moved := 0
	testwait.For(t, 30*time.Second, func() error {
		im := c.WaitConverged()
		moved = 0
		for _, p := range im.Topics[topic].Partitions {
			if len(p.ISR) != len(p.Replicas) {
				return fmt.Errorf("%s: node-%d not back in the ISR yet", p, x)
			}
			if p.Replicas[0] == x && p.Leader != x {
				moved++
			}
		}
		return nil
	})
	return moved
}

// TestCluster_UncleanElections: with both replicas of two partitions stopped in turn
// and only the out-of-sync one back, the partitions stay leaderless; ElectLeaders
// UNCLEAN elects it for one, turning unclean.leader.election.enable on for the other
// topic elects it there. min.insync.replicas changes at run time too.
func TestCluster_UncleanElections(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, WithVoters(1), WithProperty("auto.leader.rebalance.enable", "false"))
	createAssignedTopic(t, c, "u-elect", []int32{1, 2}, nil)
	createAssignedTopic(t, c, "u-config", []int32{1, 2}, nil)
	createAssignedTopic(t, c, "mir", []int32{0, 1, 2}, nil)
	waitFullISR(t, c, "u-elect", "u-config", "mir")
	ctx := testContext(t)
	adm := c.Admin(t)

	c.Stop(2)
	// min.insync.replicas above the ISR size refuses acks=all, and back.
	if err := alterErr(adm.AlterTopicConfigs(ctx, cfg("min.insync.replicas", "3"), "mir")); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, func() error {
		if code := produceTo(t, c, 0, "mir", -1); code != kerr.NotEnoughReplicas.Code {
			return fmt.Errorf("acks=all with min.insync.replicas=3 and 2 in sync: %v", kerr.ErrorForCode(code))
		}
		return nil
	})
	if err := alterErr(adm.AlterTopicConfigs(ctx, cfg("min.insync.replicas", "2"), "mir")); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, func() error {
		if code := produceTo(t, c, 0, "mir", -1); code != 0 {
			return fmt.Errorf("acks=all with min.insync.replicas=2: %v", kerr.ErrorForCode(code))
		}
		return nil
	})

	c.Stop(1)
	c.Restart(2)
	im := c.WaitConverged()
	for _, topic := range []string{"u-elect", "u-config"} {
		if p := im.Topics[topic].Partitions[0]; p.Leader != -1 {
			t.Fatalf("%s with its only in-sync replica stopped: %s, want leaderless", topic, p)
		}
	}
	res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"u-elect": {0: {}}})
	if err != nil || !errors.Is(res["u-elect"][0].Err, kerr.PreferredLeaderNotAvailable) {
		t.Fatalf("PREFERRED with the preferred replica down: %v %+v", err, res)
	}
	res, err = adm.ElectLeaders(ctx, kadm.ElectLiveReplica, kadm.TopicsSet{"u-elect": {0: {}}, "mir": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if e := res["u-elect"][0].Err; e != nil {
		t.Fatalf("UNCLEAN on u-elect: %v", e)
	}
	if e := res["mir"][0].Err; !errors.Is(e, kerr.ElectionNotNeeded) {
		t.Fatalf("UNCLEAN on a led partition: %v, want ELECTION_NOT_NEEDED", e)
	}
	if err := alterErr(adm.AlterTopicConfigs(ctx, cfg("unclean.leader.election.enable", "true"), "u-config")); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, func() error {
		im := c.WaitConverged()
		for _, topic := range []string{"u-elect", "u-config"} {
			if p := im.Topics[topic].Partitions[0]; p.Leader != 2 || len(p.ISR) != 1 || p.ISR[0] != 2 {
				return fmt.Errorf("%s: %s, want led by 2 alone", topic, p)
			}
		}
		return nil
	})
	// The image names node 2 the leader before node 2 has applied it: until then it
	// answers NOT_LEADER_FOR_PARTITION, which clients retry, as Kafka's brokers do.
	testwait.For(t, 10*time.Second, func() error {
		if code := produceTo(t, c, 2, "u-config", -1); code != 0 {
			return fmt.Errorf("produce to the uncleanly elected leader: %v", kerr.ErrorForCode(code))
		}
		return nil
	})
}

// waitFullISR waits until every partition of topics has all its replicas in the ISR.
func waitFullISR(t *testing.T, c *Cluster, topics ...string) {
	t.Helper()
	testwait.For(t, 30*time.Second, func() error {
		im := c.WaitConverged()
		for _, topic := range topics {
			for _, p := range im.Topics[topic].Partitions {
				if len(p.ISR) != len(p.Replicas) || p.Leader < 0 {
					return fmt.Errorf("%s: %s not fully in sync", topic, p)
				}
			}
		}
		return nil
	})
}

// createWithAssignment creates topic with one replica list per partition.
func createWithAssignment(t *testing.T, c *Cluster, topic string, assignment [][]int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 15000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for i, replicas := range assignment {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = int32(i), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testContext(t), c.Client(t))
	if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %v %+v", topic, err, resp)
	}
}

// TestCluster_AutoLeaderRebalance: with a 1 s check interval and a 30 % imbalance
// percentage, a broker that lost the leadership of 1 of its 4 preferred partitions (25 %)
// stays unbalanced over several checks; once it lost 3 of 3 (100 %), the controller
// moves them all back by itself.
func TestCluster_AutoLeaderRebalance(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, WithVoters(1),
		WithProperty("leader.imbalance.check.interval.seconds", "1"),
		WithProperty("leader.imbalance.per.broker.percentage", "30"))
	const x = 1
	createWithAssignment(t, c, "few", [][]int32{{1, 0, 2}})
	createWithAssignment(t, c, "single", [][]int32{{1}, {1}, {1}}) // led by 1 again once it is back
	waitFullISR(t, c, "few", "single")
	if moved := restartAndWaitISR(t, c, x, "few"); moved != 1 {
		t.Fatalf("restart moved %d leaderships of few, want 1", moved)
	}
	checks := c.Node(0).LeaderRebalanceChecks()
	testwait.For(t, 20*time.Second, func() error {
		if n := c.Node(0).LeaderRebalanceChecks(); n < checks+2 {
			return fmt.Errorf("%d balance checks since the restart", n-checks)
		}
		return nil
	})
	if p := c.WaitConverged().Topics["few"].Partitions[0]; p.Leader == x {
		t.Fatalf("few-0 was rebalanced at an imbalance (25 %%) below the percentage (30 %%): %s", p)
	}

	// Without the single-replica partitions, broker 1 prefers 3: any of them it does not
	// lead is 33 % > 30 %, so the balance is restored however the ISR rejoins interleave
	// with the checks (a partial rebalance never leaves it below the percentage).
	if resp, err := c.Admin(t).DeleteTopics(testContext(t), "single"); err != nil || resp["single"].Err != nil {
		t.Fatalf("delete single: %v %+v", err, resp)
	}
	createWithAssignment(t, c, "more", [][]int32{{1, 0, 2}, {1, 2, 0}})
	waitFullISR(t, c, "more")
	c.Stop(x)
	c.Restart(x)
	testwait.For(t, 30*time.Second, func() error {
		im := c.WaitConverged()
		for _, topic := range []string{"few", "more"} {
			for _, p := range im.Topics[topic].Partitions {
				if p.Leader != x {
					return fmt.Errorf("%s: %s not led by its preferred replica %d yet", topic, p, x)
				}
			}
		}
		return nil
	})
}
