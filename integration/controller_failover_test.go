package integration

// The controller moves: when the Raft leader stops or crashes, and when it is cut off
// from the other voters.

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// waitNewController waits up to failoverBound, counted from since, for the live nodes
// to agree on a controller other than old, and returns it with the time taken.
func (c *Cluster) waitNewController(t *testing.T, old int, since time.Time) (int, time.Duration) {
	t.Helper()
	var ctrl int
	var err error
	for {
		ctrl, err = c.agreedController()
		elapsed := time.Since(since)
		if err == nil && ctrl != old {
			return ctrl, elapsed
		}
		if err == nil {
			err = fmt.Errorf("node-%d is still the controller", old)
		}
		if elapsed > failoverBound {
			t.Fatalf("no new controller %s after node-%d stopped: %v", elapsed.Round(time.Millisecond), old, err)
		}
		time.Sleep(10 * time.Millisecond) // polling the Raft state: nothing to wait on
	}
}

// checkTopicIntact checks that topic has the same id and replica assignment in im as
// in before (leaders and ISRs may have moved with the failover).
func checkTopicIntact(before, im imageView, topic string) error {
	want, ok := before.Topics[topic]
	if !ok {
		return fmt.Errorf("%s was not in the earlier image", topic)
	}
	got, ok := im.Topics[topic]
	if !ok || got.ID != want.ID || len(got.Partitions) != len(want.Partitions) {
		return fmt.Errorf("%s: now %s, was %s", topic, got, want)
	}
	for i, p := range got.Partitions {
		if !slices.Equal(p.Replicas, want.Partitions[i].Replicas) {
			return fmt.Errorf("%s: now %s, was %s", topic, got, want)
		}
	}
	return nil
}

// TestCluster_ControllerFailover stops the controller (graceful: controlled shutdown,
// then Raft stops without handing over leadership) and later crashes the next one.
// Each time another voter must be controller within failoverBound with a higher
// epoch, topics created before are intact, new topics can be created, and the old
// node catches up once restarted.
func TestCluster_ControllerFailover(t *testing.T) {
	c := StartCluster(t, 3)
	first := c.Controller()
	epoch0 := c.Node(first).ControllerEpoch()
	c.CreateTopicRF(t, "failover-a", 3, 3, nil)
	before := c.WaitConverged()

	start := time.Now()
	c.Stop(first)
	second, took := c.waitNewController(t, first, start)
	epoch1 := c.Node(second).ControllerEpoch()
	t.Logf("graceful stop of controller node-%d: node-%d is controller after %s, epoch %d -> %d",
		first, second, took.Round(time.Millisecond), epoch0, epoch1)
	if epoch1 <= epoch0 {
		t.Fatalf("controller epoch %d did not grow past %d", epoch1, epoch0)
	}
	im := c.WaitConverged()
	if err := checkTopicIntact(before, im, "failover-a"); err != nil {
		t.Fatal(err)
	}
	// Two brokers are unfenced now (the stopped one fenced itself on the way out), so
	// replication factor 2 is the most a new topic can have.
	c.CreateTopicRF(t, "failover-b", 2, 2, nil)
	c.Restart(first)
	im = c.WaitConverged()
	for _, topic := range []string{"failover-a", "failover-b"} {
		if _, ok := c.Image(first).Topics[topic]; !ok {
			t.Fatalf("restarted node-%d does not have %s", first, topic)
		}
	}
	if err := checkTopicIntact(before, im, "failover-a"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(im.unfencedBrokerIDs(), ids(0, 3)) {
		t.Fatalf("unfenced brokers after the restart: %v", im.unfencedBrokerIDs())
	}

	// Now crash the new controller.
	before = im
	start = time.Now()
	c.Kill(second)
	third, took := c.waitNewController(t, second, start)
	epoch2 := c.Node(third).ControllerEpoch()
	t.Logf("crash of controller node-%d: node-%d is controller after %s, epoch %d -> %d",
		second, third, took.Round(time.Millisecond), epoch1, epoch2)
	if epoch2 <= epoch1 {
		t.Fatalf("controller epoch %d did not grow past %d", epoch2, epoch1)
	}
	c.CreateTopicRF(t, "failover-c", 1, 1, nil)
	c.Restart(second)
	im = c.WaitConverged()
	for _, topic := range []string{"failover-a", "failover-b"} {
		if err := checkTopicIntact(before, im, topic); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := im.Topics["failover-c"]; !ok {
		t.Fatalf("failover-c missing after the restart: %v", im.topicNames())
	}
}

// TestCluster_PartitionedMinority cuts the controller off from the other voters (its
// clients can still reach it). The majority elects a new controller; the cut-off node
// cannot change metadata (a CreateTopics it receives fails, its image stays as it
// was); the majority can. After healing, the old node holds the majority's image and
// nothing it tried to write while cut off exists anywhere.
func TestCluster_PartitionedMinority(t *testing.T) {
	c := StartCluster(t, 3)
	old := c.Controller()
	c.CreateTopicRF(t, "minority-before", 2, 3, nil)
	before := c.WaitConverged()

	// A client on the minority side, connected before the cut.
	minority := c.ClientTo(t, old).SeedBrokers()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := minority.Request(ctx, kmsg.NewPtrApiVersionsRequest()); err != nil {
		t.Fatalf("reaching node-%d before the cut: %v", old, err)
	}

	cut := time.Now()
	c.Partition(old, PeersOnly)
	wasLeader := c.Node(old).IsController()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 3000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "minority-lost", 1, 1
	req.Topics = append(req.Topics, rt)
	resp, err := minority.Request(ctx, req)
	switch {
	case err != nil:
		t.Logf("CreateTopics on the cut-off node failed: %v", err)
	case len(resp.(*kmsg.CreateTopicsResponse).Topics) != 1:
		t.Fatalf("CreateTopics on the cut-off node: %d topics in the answer", len(resp.(*kmsg.CreateTopicsResponse).Topics))
	default:
		code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
		if code != kerr.NotController.Code && code != kerr.RequestTimedOut.Code {
			t.Fatalf("CreateTopics on the cut-off node: %v, expected NOT_CONTROLLER or REQUEST_TIMED_OUT", kerr.ErrorForCode(code))
		}
		t.Logf("CreateTopics on the cut-off node (Raft leader when sent: %v): %v", wasLeader, kerr.ErrorForCode(code))
	}

	ctrl := c.Controller() // agreed by the two live nodes
	if ctrl == old {
		t.Fatalf("node-%d is still the controller while cut off", old)
	}
	// Through kadm: a controller fresh from its election answers NOT_CONTROLLER until
	// it has caught up with the log (its first tick after a Raft barrier), and a
	// client retries.
	c.CreateTopicRF(t, "minority-after", 2, 2, nil)
	majority := c.WaitConverged()
	if _, ok := majority.Topics["minority-after"]; !ok {
		t.Fatalf("the majority's image lacks minority-after")
	}
	// The cut-off node's session expires on the new controller.
	c.waitFenced(t, int32(old), cut, failoverBound)
	if im := c.Image(old); !im.equal(before) {
		t.Fatalf("the cut-off node's image changed: %s", before.diff(im))
	}
	if c.Node(old).IsController() {
		t.Fatalf("the cut-off node still believes it is the Raft leader")
	}

	c.Heal()
	c.WaitReady() // the old node heartbeats again and is unfenced
	im := c.WaitConverged()
	if _, ok := im.Topics["minority-lost"]; ok {
		t.Fatalf("minority-lost, sent to the cut-off node, exists after healing")
	}
	for _, topic := range []string{"minority-before", "minority-after"} {
		if err := checkTopicIntact(majority, im, topic); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(im.topicNames(), []string{"minority-after", "minority-before"}) {
		t.Fatalf("topics after healing: %v", im.topicNames())
	}
	if !slices.Equal(im.unfencedBrokerIDs(), ids(0, 3)) {
		t.Fatalf("unfenced brokers after healing: %v", im.unfencedBrokerIDs())
	}

	// A follower cut off from everyone, clients included: unreachable, fenced by the
	// others once its session expires, back after healing.
	ctrl = c.Controller()
	follower := (ctrl + 1) % 3
	cut = time.Now()
	c.Partition(follower)
	rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer rcancel()
	if _, err := c.ClientTo(t, follower).SeedBrokers()[0].Request(rctx, kmsg.NewPtrApiVersionsRequest()); err == nil {
		t.Fatalf("a client reached node-%d through the cut", follower)
	}
	c.waitFenced(t, int32(follower), cut, 0)
	c.Heal()
	c.WaitReady()
	c.WaitConverged()
}

// TestCluster_ForwardFollowsNewController crashes the controller and at once sends a
// CreateTopics to a survivor: the survivor holds the request while no controller is
// elected and forwards it to the new one, so the one request succeeds (it used to be
// answered NOT_CONTROLLER, leaving the client to back off and retry). Metadata from the
// survivor stops naming the dead node as controller once Raft has not heard from it
// for controller.quorum.fetch.timeout.ms.
func TestCluster_ForwardFollowsNewController(t *testing.T) {
	c := StartCluster(t, 3)
	c.CreateTopicRF(t, "forward-before", 1, 3, nil)
	old := c.Controller()
	survivor := (old + 1) % 3
	start := time.Now()
	c.Kill(old)

	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32((2 * failoverBound).Milliseconds())
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "forward-after", 1, 1
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 3*failoverBound)
	defer cancel()
	resp, err := c.RequestTo(ctx, t, survivor, req)
	if err != nil {
		t.Fatalf("CreateTopics through node-%d after the controller crashed: %v", survivor, err)
	}
	topics := resp.(*kmsg.CreateTopicsResponse).Topics
	if len(topics) != 1 || topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics through node-%d after the controller crashed: %+v", survivor, topics)
	}
	took := time.Since(start)
	t.Logf("controller node-%d crashed: CreateTopics through node-%d accepted after %s", old, survivor, took.Round(time.Millisecond))
	if took > failoverBound {
		t.Fatalf("CreateTopics took %s, more than %s", took, failoverBound)
	}
	m := c.metadataVia(t, survivor, nil, false)
	if m.ControllerID == int32(old) || m.ControllerID < 0 {
		t.Fatalf("Metadata from node-%d names controller %d after node-%d crashed", survivor, m.ControllerID, old)
	}
	if _, ok := c.WaitConverged().Topics["forward-after"]; !ok {
		t.Fatal("forward-after is missing from the survivors' image")
	}
}
