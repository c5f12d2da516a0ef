package broker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// busyTestSession is the session timeout of the busy-broker tests: a stall lasts
// 2.5 times as long, so a heartbeat that waited for the stall would expire the session.
const busyTestSession = 2 * time.Second

func startBusyCluster(t *testing.T) (c *testCluster, ctrl, busy *Broker) {
	t.Helper()
	c = startTestCluster(t, 3, 3, map[string]string{
		"broker.session.timeout.ms":    fmt.Sprint(busyTestSession.Milliseconds()),
		"broker.heartbeat.interval.ms": "250",
	})
	testwait.For(t, 20*time.Second, func() error {
		for _, b := range c.brokers {
			if b.IsController() && slices.Equal(b.Image().UnfencedBrokerIDs(), []int32{0, 1, 2}) {
				ctrl = b
				return nil
			}
		}
		return fmt.Errorf("no controller with three unfenced brokers")
	})
	busy = c.brokers[(ctrl.NodeID()+1)%3]
	return c, ctrl, busy
}

// stallFor installs a hook that blocks until release is closed and returns release.
func stallFor(t *testing.T, hook interface{ Store(*func()) }) chan struct{} {
	release := make(chan struct{})
	stall := func() { <-release }
	hook.Store(&stall)
	t.Cleanup(func() {
		hook.Store(nil)
		select {
		case <-release:
		default:
			close(release)
		}
	})
	return release
}

// watchUnfenced fails the test if ctrl's image shows broker id fenced at any time
// during d.
func watchUnfenced(t *testing.T, ctrl *Broker, id int32, d time.Duration, what string) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if br := ctrl.Image().Brokers[id]; br == nil || br.Fenced {
			t.Fatalf("%s: broker %d was fenced although it was alive and heartbeating", what, id)
		}
	}
}

// A busy but alive broker keeps its session (Kafka fences only a broker whose
// heartbeats stopped ARRIVING for broker.session.timeout.ms), whether its reconciler is
// stuck (opening thousands of replicas, say) or the controller is busy with a queue of
// its other requests.
func TestBusyBrokerKeepsSession(t *testing.T) {
	_, ctrl, busy := startBusyCluster(t)

	// Its reconciler stalls: heartbeats do not wait for metadata work. Once the
	// reconciler runs again, it hosts the new replicas.
	release := stallFor(t, &busy.stalls.reconcile)
	if resp, err := newAdmin(t, ctrl).CreateTopic(testContext(t), 6, 3, nil, "busy"); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	watchUnfenced(t, ctrl, busy.NodeID(), 5*busyTestSession/2, "reconciler stalled")
	if busy.partitions.get("busy", 0) != nil {
		t.Fatal("the stalled reconciler opened a replica")
	}
	close(release)
	testwait.For(t, 20*time.Second, func() error {
		for p := int32(0); p < 6; p++ {
			if busy.partitions.get("busy", p) == nil {
				return fmt.Errorf("partition %d not open on broker %d", p, busy.NodeID())
			}
		}
		return nil
	})

	// The controller stalls with more of the broker's requests waiting than one
	// connection may owe answers (rpc.DefaultMaxInflight): heartbeats travel on their
	// own controller connection, so every one is still read.
	release = stallFor(t, &ctrl.stalls.controllerOp)
	const requests = 150
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := kmsg.NewPtrAlterPartitionRequest()
			req.Version = 1
			req.BrokerID, req.BrokerEpoch = busy.NodeID(), busy.brokerEpoch.Load()
			rt := kmsg.NewAlterPartitionRequestTopic()
			rt.Topic = fmt.Sprintf("no-such-topic-%d", i)
			rp := kmsg.NewAlterPartitionRequestTopicPartition()
			rp.NewISR = []int32{busy.NodeID()}
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			busy.controllerCall(ctx, req) // answered once the controller runs again
		}()
	}
	for end := time.Now().Add(5 * busyTestSession / 2); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if !ctrl.ctrl.Sessions().Valid(busy.NodeID(), time.Now(), busyTestSession) {
			t.Fatalf("the controller stopped hearing broker %d's heartbeats while its other requests waited", busy.NodeID())
		}
	}
	close(release)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the waiting controller requests were not answered after the stall")
	}
	watchUnfenced(t, ctrl, busy.NodeID(), time.Second, "after the controller stall")
}
