package broker

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
)

// A broker in controlled shutdown stays fenced and out of every ISR until it is gone,
// even when it heartbeats very often (its regular heartbeats used to unfence it and let
// leaders add it back to their ISRs).
func TestControlledShutdownStaysFenced(t *testing.T) {
	c := startTestCluster(t, 3, 3, map[string]string{
		"broker.session.timeout.ms":    "3000",
		"broker.heartbeat.interval.ms": "1",
	})
	if resp, err := newAdmin(t, c.brokers[0]).CreateTopic(testContext(t), 4, 3, nil, "cs"); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	var ctrl *Broker
	testwait.For(t, 10*time.Second, func() error {
		for _, b := range c.brokers {
			if b.IsController() {
				ctrl = b
				return nil
			}
		}
		return fmt.Errorf("no controller")
	})
	for round := 0; round < 3; round++ {
		victim := c.brokers[(int(ctrl.NodeID())+1+round%2)%3]
		id := victim.NodeID()
		testwait.For(t, 20*time.Second, func() error {
			for _, p := range ctrl.Image().Topic("cs").Partitions {
				if !slices.Contains(p.ISR, id) {
					return fmt.Errorf("broker %d not back in the ISR of partition %d", id, p.ID)
				}
			}
			return nil
		})
		done := make(chan struct{})
		go func() { victim.Shutdown(context.Background()); close(done) }()
		sawFenced := false
		deadline := time.After(2500 * time.Millisecond) // before its session could expire
	watch:
		for {
			im := ctrl.Image()
			if im.Brokers[id].Fenced {
				sawFenced = true
			} else if sawFenced {
				t.Fatalf("round %d: broker %d was unfenced during its controlled shutdown", round, id)
			}
			for _, p := range im.Topic("cs").Partitions {
				if sawFenced && slices.Contains(p.ISR, id) {
					t.Fatalf("round %d: broker %d back in the ISR %v during its controlled shutdown", round, id, p.ISR)
				}
			}
			select {
			case <-deadline:
				break watch
			case <-time.After(time.Millisecond):
			}
		}
		<-done
		if !sawFenced {
			t.Fatalf("round %d: broker %d was never fenced by its controlled shutdown", round, id)
		}
		c.brokers[int(id)] = nil
		c.restart(int(id))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := c.brokers[int(id)].WaitReady(ctx); err != nil {
			cancel()
			t.Fatal(err)
		}
		cancel()
	}
}

// TestControlledShutdownInBoundedEntries: with more ISR removals than an entry holds, the
// stopping broker is told to stop once its leaderships have moved, and the controller
// then takes it out of every other ISR, each partition changing once.
func TestControlledShutdownInBoundedEntries(t *testing.T) {
	testControlledShutdownInBoundedEntries(t, false)
}

// TestControlledShutdownOfTheController: the same when the stopping broker is the
// controller: it hands Raft over once its leaderships have moved and writes none of its
// other ISR removals itself; the next controller does, each partition changing once.
func TestControlledShutdownOfTheController(t *testing.T) {
	testControlledShutdownInBoundedEntries(t, true)
}

func testControlledShutdownInBoundedEntries(t *testing.T, stopController bool) {
	old := shutdownEntryRecords.Load()
	shutdownEntryRecords.Store(4)
	defer shutdownEntryRecords.Store(old)
	c := startTestCluster(t, 3, 3, nil)
	if resp, err := newAdmin(t, c.brokers[0]).CreateTopic(testContext(t), 24, 3, nil, "bounded"); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	var ctrl *Broker
	testwait.For(t, 10*time.Second, func() error {
		for _, b := range c.brokers {
			if b.IsController() {
				ctrl = b
				return nil
			}
		}
		return fmt.Errorf("no controller")
	})
	victim := c.brokers[(int(ctrl.NodeID())+1)%3]
	if stopController {
		victim = ctrl
	}
	id := victim.NodeID()
	testwait.For(t, 20*time.Second, func() error {
		for _, p := range ctrl.Image().Topic("bounded").Partitions {
			if !slices.Contains(p.ISR, id) {
				return fmt.Errorf("broker %d not in the ISR of partition %d", id, p.ID)
			}
		}
		return nil
	})
	before := ctrl.Image().Topic("bounded").Partitions
	if err := victim.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.brokers[int(id)] = nil
	if stopController {
		testwait.For(t, 20*time.Second, func() error {
			for _, b := range c.brokers {
				if b != nil && b.IsController() {
					ctrl = b
					if n := ctrl.Image().LeaderCount(id); n != 0 { // applying the log still
						return fmt.Errorf("broker %d leads %d partitions in the new controller's image", id, n)
					}
					return nil
				}
			}
			return fmt.Errorf("no new controller")
		})
	}
	if n := ctrl.Image().LeaderCount(id); n != 0 {
		t.Fatalf("broker %d stopped still leading %d partitions", id, n)
	}
	testwait.For(t, 20*time.Second, func() error {
		for _, p := range ctrl.Image().Topic("bounded").Partitions {
			if slices.Contains(p.ISR, id) {
				return fmt.Errorf("broker %d still in the ISR %v of partition %d", id, p.ISR, p.ID)
			}
		}
		return nil
	})
	for i, p := range ctrl.Image().Topic("bounded").Partitions {
		if p.PartitionEpoch != before[i].PartitionEpoch+1 {
			t.Errorf("partition %d: partition epoch %d, was %d: want one change", i, p.PartitionEpoch, before[i].PartitionEpoch)
		}
	}
}
