package integration

// Failover without waiting out broker.session.timeout.ms (issue P17 items 4-6): a
// restarted node replaces its previous incarnation at once, a new controller fences
// the dead one's broker as it starts, and a broker whose listener refuses connections
// is fenced on that evidence. Every test gives the brokers a session far longer than
// its own bounds, so passing proves that nothing waited for a session to expire.
// The speed is measured in failover_bench_test.go, not asserted here.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// longSession is a broker.session.timeout.ms no test here may wait out.
const longSession = 60 * time.Second

// fastBound bounds what the tests here wait for: far below longSession, far above
// what a loaded machine needs.
const fastBound = 20 * time.Second

func withLongSession() Option {
	return WithProperty("broker.session.timeout.ms", fmt.Sprint(longSession.Milliseconds()))
}

// produceAndConsume writes one record to topic/partition through a client seeded with
// seeds (acks=all) and reads it back.
func produceAndConsume(t *testing.T, seeds []string, topic string, partition int32) {
	t.Helper()
	cl := newClient(t, seeds, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), fastBound)
	defer cancel()
	value := fmt.Sprintf("v-%d", time.Now().UnixNano())
	r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: partition, Value: []byte(value)}).First()
	if err != nil {
		t.Fatalf("produce to %s/%d: %v", topic, partition, err)
	}
	cons := newClient(t, seeds, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(r.Offset)}}))
	for {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consume %s/%d at %d: %v", topic, partition, r.Offset, ctx.Err())
		}
		found := false
		fs.EachRecord(func(rec *kgo.Record) { found = found || string(rec.Value) == value })
		if found {
			return
		}
	}
}

// waitNodeReady waits for node i's start-up readiness, at most d.
func (c *Cluster) waitNodeReady(t *testing.T, i int, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := c.Node(i).WaitReady(ctx); err != nil {
		t.Fatalf("node-%d: %v", i, err)
	}
}

// TestCluster_RestartReplacesItsPreviousIncarnation: a one-node cluster (no peer could
// report the crash) killed and restarted on its data directory registers at once,
// naming the incarnation it recorded there, although that incarnation's session has a
// minute to run; it serves produce and fetch again.
func TestCluster_RestartReplacesItsPreviousIncarnation(t *testing.T) {
	c := StartCluster(t, 1, withLongSession())
	c.CreateTopic(t, "restart", 1, nil)
	produceAndConsume(t, c.Addrs(), "restart", 0)
	old := c.Image(0).Brokers[0]
	if _, err := os.Stat(filepath.Join(c.nodes[0].dir, "registration.properties")); err != nil {
		t.Fatalf("no registration file: %v", err)
	}
	c.Kill(0)
	c.Start(0)
	c.waitNodeReady(t, 0, fastBound)
	now := c.Image(0).Brokers[0]
	if now.IncarnationID == old.IncarnationID || now.Epoch <= old.Epoch || now.Fenced {
		t.Fatalf("broker 0 after the restart: %+v, before: %+v", now, old)
	}
	produceAndConsume(t, c.Addrs(), "restart", 0)
}

// TestCluster_RestartWithoutItsRegistrationFileWaits: the same restart from a
// directory that does not name the previous incarnation (the file removed: as if
// another directory claimed the node id) is refused DUPLICATE_BROKER_REGISTRATION
// until the old session expires, as in Kafka.
func TestCluster_RestartWithoutItsRegistrationFileWaits(t *testing.T) {
	const session = 4 * time.Second
	c := StartCluster(t, 1, WithProperty("broker.session.timeout.ms", fmt.Sprint(session.Milliseconds())))
	c.CreateTopic(t, "restart", 1, nil)
	c.Kill(0)
	if err := os.Remove(filepath.Join(c.nodes[0].dir, "registration.properties")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c.Start(0)
	c.waitNodeReady(t, 0, startTimeout)
	// The new controller term gave the old incarnation a fresh session when it began,
	// after this start: the registration could not pass before it expired.
	if took := time.Since(start); took < session {
		t.Fatalf("ready %s after the restart, before the old session (%s) could expire", took.Round(time.Millisecond), session)
	}
	produceAndConsume(t, c.Addrs(), "restart", 0)
}

// TestCluster_NewControllerFencesTheDeadController: the controller of three nodes is
// killed while no partition exists (so no follower can report it); a topic created
// through a survivor right away is placed on the two live brokers only, because the new
// controller fenced the dead one's broker as its term started, before any decision.
func TestCluster_NewControllerFencesTheDeadController(t *testing.T) {
	c := StartCluster(t, 3, withLongSession())
	ctrl := c.Controller()
	survivor := (ctrl + 1) % 3
	c.Kill(ctrl)
	r := c.createTopicOnce(t, survivor, "after", 12, 1, nil)
	if r.ErrorCode != 0 {
		t.Fatalf("CreateTopics via node-%d: %v (%s)", survivor, kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage))
	}
	im := c.Image(survivor)
	if b := im.Brokers[int32(ctrl)]; !b.Fenced {
		t.Fatalf("the dead controller %d is not fenced when the topic exists: %+v", ctrl, b)
	}
	for _, p := range im.Topics["after"].Partitions {
		if slices.Contains(p.Replicas, int32(ctrl)) {
			t.Fatalf("partition %d placed on the dead controller %d: %v", p.ID, ctrl, p.Replicas)
		}
	}
	produceAndConsume(t, c.Addrs(), "after", 0)
	c.Restart(ctrl)
	if got := c.WaitConverged().unfencedBrokerIDs(); !slices.Equal(got, ids(0, 3)) {
		t.Fatalf("unfenced brokers after the restart: %v", got)
	}
}

// TestCluster_RefusedLeaderFencedBeforeItsSession: a broker leading partitions of an RF
// 3 topic is killed; its followers' reconnects are refused, they report it, the
// controller's probe is refused too, and it is fenced with new leaders elected long
// before its session could expire; acks=all writes go on.
func TestCluster_RefusedLeaderFencedBeforeItsSession(t *testing.T) {
	c := StartCluster(t, 3, withLongSession())
	minISR := "2"
	c.CreateTopicRF(t, "refused", 6, 3, map[string]*string{"min.insync.replicas": &minISR})
	im := c.WaitConverged()
	ctrl := c.Controller()
	victim := int32(-1)
	for i := range 3 {
		if i == ctrl {
			continue
		}
		for _, p := range im.Topics["refused"].Partitions {
			if p.Leader == int32(i) {
				victim = int32(i)
			}
		}
	}
	if victim < 0 {
		t.Fatalf("no broker but the controller leads a partition: %s", im.Topics["refused"])
	}
	for i := range int32(6) {
		produceAndConsume(t, c.Addrs(), "refused", i) // the followers are fetching
	}
	start := time.Now()
	c.Kill(int(victim))
	testwait.For(t, fastBound, func() error {
		for _, i := range c.live() {
			im := c.Image(i)
			if !im.Brokers[victim].Fenced {
				return fmt.Errorf("node-%d does not see broker %d fenced", i, victim)
			}
			for _, p := range im.Topics["refused"].Partitions {
				if p.Leader == victim || p.Leader < 0 || slices.Contains(p.ISR, victim) {
					return fmt.Errorf("node-%d: partition %d leader %d ISR %v", i, p.ID, p.Leader, p.ISR)
				}
			}
		}
		return nil
	})
	t.Logf("broker %d fenced with new leaders %s after the kill (session %s)", victim, time.Since(start).Round(time.Millisecond), longSession)
	for i := range int32(6) {
		produceAndConsume(t, c.Addrs(), "refused", i)
	}
}
