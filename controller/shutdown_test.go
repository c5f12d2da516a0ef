package controller

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/metadata"
)

// shutdownQuorum is brokers 1 and 2 (epoch 1, unfenced) and a partition led by 1 with
// ISR {1, 2}, on the leader, with its controller's term started.
func shutdownQuorum(t *testing.T, opts ...func(*Config)) (*memQuorum, *Controller) {
	t.Helper()
	topic := metadata.UuidFromBytes([16]byte{9})
	q := newMemQuorum(t,
		metadata.RegisterBrokerRecord{BrokerID: 1}, metadata.RegisterBrokerRecord{BrokerID: 2},
		metadata.TopicRecord{Name: "t", TopicID: topic},
		metadata.PartitionRecord{TopicID: topic, PartitionID: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1},
	)
	q.leader.Store(true)
	c := startController(t, q, time.Minute, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Do(ctx, func(*metadata.Image) ([]metadata.Record, error) { return nil, nil }); err != nil {
		t.Fatalf("the term did not start: %v", err)
	}
	return q, c
}

// A broker asking for a controlled shutdown while another unfenced broker runs is
// fenced and its leaderships move, as before: a clean stop of one broker in a healthy
// cluster is not made less safe by the whole-cluster answer.
func TestControlledShutdownMovesLeadershipsWhileAnotherBrokerRuns(t *testing.T) {
	q, c := shutdownQuorum(t)
	c.Sessions().Heartbeat(2, int64(q.Image().Offset), false, time.Now())
	im, stopping, err := c.ControlledShutdown(context.Background(), 1, 1)
	if err != nil || stopping {
		t.Fatalf("ControlledShutdown: stopping %v, err %v; want the leaderships moved", stopping, err)
	}
	if p := im.Topic("t").Partitions[0]; p.Leader != 2 || !im.Brokers[1].Fenced {
		t.Fatalf("leader %d, broker 1 fenced %v; want leader 2 and broker 1 fenced", p.Leader, im.Brokers[1].Fenced)
	}
}

// When every other unfenced broker asked for a controlled shutdown too, the whole
// cluster is stopping: the controller answers at once and writes nothing (no broker
// is left to lead).
func TestControlledShutdownOfTheWholeClusterWritesNothing(t *testing.T) {
	q, c := shutdownQuorum(t)
	c.Sessions().Heartbeat(2, int64(q.Image().Offset), true, time.Now())
	offset := q.Image().Offset
	_, stopping, err := c.ControlledShutdown(context.Background(), 1, 1)
	if err != nil || !stopping {
		t.Fatalf("ControlledShutdown: stopping %v, err %v; want the whole cluster stopping", stopping, err)
	}
	im := q.Image()
	if im.Offset != offset || im.Topic("t").Partitions[0].Leader != 1 || im.Brokers[1].Fenced {
		t.Fatalf("something was written: offset %d (was %d), leader %d, fenced %v",
			im.Offset, offset, im.Topic("t").Partitions[0].Leader, im.Brokers[1].Fenced)
	}
}

// A controlled shutdown waiting for its entry (here a stalled controller goroutine;
// at scale a large entry that a quorum of stopping voters may never commit) returns
// as soon as the last other broker asks for its own.
func TestControlledShutdownWaitingReturnsWhenTheLastOtherBrokerStops(t *testing.T) {
	stall := make(chan struct{})
	stalled := make(chan struct{}, 1)
	var armed atomic.Bool
	_, c := shutdownQuorum(t, func(cfg *Config) {
		cfg.BeforeOp = func() {
			if !armed.Load() {
				return
			}
			select {
			case stalled <- struct{}{}:
			default:
			}
			<-stall
		}
	})
	armed.Store(true)
	defer close(stall)
	type result struct {
		stopping bool
		err      error
	}
	done := make(chan result, 1)
	go func() {
		_, stopping, err := c.ControlledShutdown(context.Background(), 1, 1)
		done <- result{stopping, err}
	}()
	<-stalled // the decision is stalled on the controller goroutine
	select {
	case r := <-done:
		t.Fatalf("ControlledShutdown returned before broker 2 asked: %+v", r)
	default:
	}
	c.Sessions().Heartbeat(2, 0, true, time.Now())
	select {
	case r := <-done:
		if r.err != nil || !r.stopping {
			t.Fatalf("ControlledShutdown: stopping %v, err %v; want the whole cluster stopping", r.stopping, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ControlledShutdown still waiting after every other broker asked for its own")
	}
}

// When every other broker is fenced (restarted and catching up, as in a fast rolling
// restart), one broker's stop is not the whole cluster's: it is fenced as usual, so
// that its leaderships move once the others are back, rather than staying with a
// stopped broker until its session expires.
func TestControlledShutdownWithEveryOtherBrokerFencedFencesIt(t *testing.T) {
	q, c := shutdownQuorum(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Do(ctx, func(*metadata.Image) ([]metadata.Record, error) {
		return []metadata.Record{metadata.FenceBrokerRecord{BrokerID: 2, BrokerEpoch: 1}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if !q.Image().Brokers[2].Fenced {
		t.Fatal("broker 2 is not fenced")
	}
	im, stopping, err := c.ControlledShutdown(context.Background(), 1, 1)
	if err != nil || stopping {
		t.Fatalf("ControlledShutdown: stopping %v, err %v; want broker 1 fenced as usual", stopping, err)
	}
	if !im.Brokers[1].Fenced {
		t.Fatal("broker 1 is not fenced")
	}
}
