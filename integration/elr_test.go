package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// elrPartition waits until partition 0 of topic, as the live nodes agree on it, passes
// ok, and returns it.
func elrPartition(t *testing.T, c *Cluster, topic, what string, ok func(p partitionView) bool) partitionView {
	t.Helper()
	var p partitionView
	testwait.For(t, 30*time.Second, func() error {
		im := c.WaitConverged()
		p = im.Topics[topic].Partitions[0]
		if !ok(p) {
			return fmt.Errorf("%s: leader %d isr %v elr %v last known %v", what, p.Leader, p.ISR, p.ELR, p.LastKnownELR)
		}
		return nil
	})
	return p
}

// TestCluster_ELRCleanElectionAfterCorrelatedFailure is KIP-966's scenario: an RF 3,
// min.insync.replicas 2 partition loses its replicas one after another, the last one
// (the leader) included. Replica 2 left the ISR while the ISR was below min ISR, so it
// holds every acknowledged record and stays an eligible leader replica; when it
// returns it is elected cleanly, although it is not in the ISR — where Kafka 3's rule
// (the ISR only) leaves the partition leaderless until an unclean election. Every
// acknowledged record reads back. Node 0 is the only Raft voter and holds no replica,
// so the controller outlives all three replicas (with three voters among the replicas
// the quorum would be lost with the second). Replica 1, killed, comes back after an
// unclean shutdown and is dropped from the ELR.
func TestCluster_ELRCleanElectionAfterCorrelatedFailure(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 4, WithVoters(1)) // a new cluster: eligible leader replicas on
	const topic = "elr"
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 15000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	rt.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1, 2, 3}}}
	minISR := "2"
	rt.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "min.insync.replicas", Value: &minISR}}
	req.Topics = append(req.Topics, rt)
	if resp, err := req.RequestWith(testContext(t), c.Client(t)); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %v %+v", err, resp)
	}
	elrPartition(t, c, topic, "all in sync", func(p partitionView) bool { return len(p.ISR) == 3 && p.Leader == 1 })

	const n = 200
	produceN(t, c, topic, n) // acks=all: acknowledged by all three

	c.Kill(3)
	elrPartition(t, c, topic, "3 out, ISR at min ISR", func(p partitionView) bool {
		return slices.Equal(p.ISR, []int32{1, 2}) && len(p.ELR) == 0
	})
	c.Stop(2) // a clean shutdown: it records its broker epoch
	elrPartition(t, c, topic, "2 out below min ISR: eligible", func(p partitionView) bool {
		return slices.Equal(p.ISR, []int32{1}) && slices.Equal(p.ELR, []int32{2})
	})
	c.Kill(1) // the leader
	p := elrPartition(t, c, topic, "leader gone", func(p partitionView) bool {
		return p.Leader == -1 && len(p.ISR) == 0 && slices.Equal(p.ELR, []int32{2, 1})
	})
	// Kafka 3's rule on this state: no live ISR member, so only an unclean election.
	live := func(r int32) bool { return r == 2 }
	mp := metadata.Partition(p)
	if leader, _ := metadata.ElectLeader(&mp, []int32{1}, live, false); leader != -1 {
		t.Fatalf("the ISR-only rule elected %d", leader)
	}
	// DescribeTopicPartitions shows the ELR.
	dreq := kmsg.NewPtrDescribeTopicPartitionsRequest()
	dreq.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: topic}}
	dresp, err := dreq.RequestWith(testContext(t), c.ClientTo(t, 0))
	if err != nil || len(dresp.Topics) != 1 || len(dresp.Topics[0].Partitions) != 1 {
		t.Fatalf("describe topic partitions: %v %+v", err, dresp)
	}
	if dp := dresp.Topics[0].Partitions[0]; !slices.Equal(dp.EligibleLeaderReplicas, []int32{2, 1}) || len(dp.ISR) != 0 || dp.LeaderID != -1 {
		t.Fatalf("described: %+v", dp)
	}
	// petrel topics describe prints them as kafka-topics.sh 4.x does.
	code, stdout, stderr := petrel("topics", "describe", "--bootstrap-server", c.Addr(0), topic)
	if want := "\tTopic: elr\tPartition: 0\tLeader: none\tReplicas: 1,2,3\tIsr: \tElr: 2,1\tLastKnownElr: 1\n"; code != 0 || !strings.HasSuffix(stdout, want) {
		t.Fatalf("topics describe: exit %d\n%s%s\nwant the line %q", code, stdout, stderr, want)
	}

	c.Restart(2)
	elrPartition(t, c, topic, "2 elected from the ELR", func(p partitionView) bool {
		return p.Leader == 2 && slices.Equal(p.ISR, []int32{2}) && slices.Equal(p.ELR, []int32{1})
	})
	if !slices.ContainsFunc(c.logLines(0), func(l string) bool {
		return strings.Contains(l, "leaders elected from the eligible leader replicas")
	}) {
		t.Fatal("the controller did not log the ELR election")
	}
	for _, l := range c.logLines(0) {
		if strings.Contains(strings.ToLower(l), "unclean") && strings.Contains(l, topic) {
			t.Fatalf("an unclean election was logged: %s", l)
		}
	}

	// Every acknowledged record reads back from the new leader.
	cons := c.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	got := 0
	testwait.For(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(testContext(t), 2*time.Second)
		defer cancel()
		fetches := cons.PollRecords(ctx, n)
		for _, r := range fetches.Records() {
			if want := fmt.Sprintf("value-%d", got); string(r.Value) != want || r.Offset != int64(got) {
				t.Fatalf("offset %d: %q, want %q at %d", r.Offset, r.Value, want, got)
			}
			got++
		}
		if got < n {
			return fmt.Errorf("read %d of %d", got, n)
		}
		return nil
	})

	// 1 comes back after an unclean shutdown (killed): out of the ELR; once a follower
	// catches up the ISR is back at min ISR and both lists are empty.
	c.Restart(1)
	elrPartition(t, c, topic, "1 out of the ELR", func(p partitionView) bool { return !slices.Contains(p.ELR, 1) })
	c.Restart(3)
	elrPartition(t, c, topic, "ISR back at min ISR", func(p partitionView) bool {
		return len(p.ISR) >= 2 && len(p.ELR) == 0 && len(p.LastKnownELR) == 0
	})
}

// createAssigned creates topic with one partition on replicas (min.insync.replicas
// left at Kafka's default, 1).
func createAssigned(t *testing.T, c *Cluster, topic string, replicas ...int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 15000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	rt.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: replicas}}
	req.Topics = append(req.Topics, rt)
	if resp, err := req.RequestWith(testContext(t), c.Client(t)); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %v %+v", topic, err, resp)
	}
}

// readBackNumbered reads partition 0 of topic from the start and checks it holds the
// values 0..n-1 (produceNumbered's) at offsets 0..n-1.
func readBackNumbered(t *testing.T, c *Cluster, topic string, n int) {
	t.Helper()
	cons := c.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	got := 0
	testwait.For(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(testContext(t), 2*time.Second)
		defer cancel()
		for _, r := range cons.PollRecords(ctx, n).Records() {
			if want := fmt.Sprint(got); string(r.Value) != want || r.Offset != int64(got) {
				t.Fatalf("offset %d: %q, want %q at %d", r.Offset, r.Value, want, got)
			}
			got++
		}
		if got < n {
			return fmt.Errorf("read %d of %d", got, n)
		}
		return nil
	})
}

// TestCluster_ELRKilledOnlyInSyncReplicaLeadsAgain: with eligible leader replicas on (a
// new cluster's default), an RF 3 partition loses its followers (kill -9), takes more
// records with its leader as the only in-sync replica, then loses the leader too (kill
// -9): the ISR empties, the leader is in the ELR and is the last known leader. Replica 2
// restarts first: it is neither in the ISR nor in the ELR, so it is not elected. Replica
// 1 restarts after its unclean shutdown: its registration takes it out of the ELR, and,
// the ISR and ELR being empty, the controller elects it as the last known leader once
// it is unfenced (Kafka 4.2's balanced recovery). Every acknowledged record reads back,
// and the followers catch up into the ISR. Node 0 is the only Raft voter and holds no
// replica, so the controller outlives the replicas.
func TestCluster_ELRKilledOnlyInSyncReplicaLeadsAgain(t *testing.T) {
	c := StartCluster(t, 4, WithVoters(1))
	const topic = "elr-last-known"
	createAssigned(t, c, topic, 1, 2, 3)
	elrPartition(t, c, topic, "all in sync", func(p partitionView) bool { return len(p.ISR) == 3 && p.Leader == 1 })
	cl := c.Client(t)
	produceNumbered(t, cl, topic, 0, 100) // acks=all: acknowledged by all three

	c.Kill(3)
	c.Kill(2)
	elrPartition(t, c, topic, "1 the only in-sync replica", func(p partitionView) bool {
		return slices.Equal(p.ISR, []int32{1}) && p.Leader == 1 && len(p.ELR) == 0 // min ISR 1: no ELR
	})
	produceNumbered(t, cl, topic, 100, 200) // acknowledged by 1 alone

	c.Kill(1)
	elrPartition(t, c, topic, "1 fenced: ISR empty, 1 eligible and the last known leader", func(p partitionView) bool {
		return p.Leader == -1 && len(p.ISR) == 0 && slices.Equal(p.ELR, []int32{1}) && slices.Equal(p.LastKnownELR, []int32{1})
	})

	c.Restart(2)
	testwait.For(t, 30*time.Second, func() error {
		if b := c.WaitConverged().Brokers[2]; b.Fenced {
			return fmt.Errorf("broker 2 still fenced")
		}
		return nil
	})
	elrPartition(t, c, topic, "2 back and unfenced: not elected", func(p partitionView) bool {
		return p.Leader == -1 && len(p.ISR) == 0 && slices.Equal(p.LastKnownELR, []int32{1})
	})

	c.Restart(1)
	elrPartition(t, c, topic, "1, the last known leader, elected", func(p partitionView) bool {
		return p.Leader == 1 && slices.Contains(p.ISR, 1) && len(p.ELR) == 0 && len(p.LastKnownELR) == 0
	})
	if !slices.ContainsFunc(c.logLines(0), func(l string) bool { return strings.Contains(l, "last known leaders elected") }) {
		t.Fatal("the controller did not log the last known leader's election")
	}
	readBackNumbered(t, c, topic, 200)

	c.Restart(3)
	elrPartition(t, c, topic, "followers back in the ISR", func(p partitionView) bool { return len(p.ISR) == 3 && p.Leader == 1 })
	produceNumbered(t, cl, topic, 200, 210)
	readBackNumbered(t, c, topic, 210)
}

// TestCluster_ELRKilledSingleReplicaLeadsAgain: an RF 1 partition whose only replica
// is killed (kill -9) and restarted leads again and serves every acknowledged record
// (with eligible leader replicas on, which left it leaderless for ever before the last
// known leader was elected).
func TestCluster_ELRKilledSingleReplicaLeadsAgain(t *testing.T) {
	c := StartCluster(t, 2, WithVoters(1))
	const topic = "elr-rf1"
	createAssigned(t, c, topic, 1)
	elrPartition(t, c, topic, "led", func(p partitionView) bool { return p.Leader == 1 })
	produceNumbered(t, c.Client(t), topic, 0, 100)

	c.Kill(1)
	c.Restart(1)
	elrPartition(t, c, topic, "leads again", func(p partitionView) bool {
		return p.Leader == 1 && slices.Equal(p.ISR, []int32{1}) && len(p.ELR) == 0 && len(p.LastKnownELR) == 0
	})
	readBackNumbered(t, c, topic, 100)
}
