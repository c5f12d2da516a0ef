package controller

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/metadata"
)

// The probe targets are the unfenced leaders of the named topics other than self.
func TestProbeTargets(t *testing.T) {
	im := holdImage()
	im.Brokers[3] = &metadata.Broker{ID: 3, Epoch: 10, Fenced: true}
	im.Topics["u"] = &metadata.Topic{Name: "u", Partitions: []*metadata.Partition{{ID: 0, Leader: 2}, {ID: 1, Leader: -1}}}
	got := ProbeTargets(im, []*metadata.Topic{im.Topics["t"], im.Topics["u"]}, 1)
	if len(got) != 1 || got[0].ID != 2 {
		t.Fatalf("targets %v, want broker 2 only", got)
	}
}

// Concurrent Metadata requests share one probe per broker; a refusal is recorded
// before the waiters wake; the wait is bounded by MetadataProbeWait.
func TestLeaderProbesCoalesceAndRecordRefusals(t *testing.T) {
	r := NewRefusals()
	release := make(chan struct{})
	var calls atomic.Int32
	var wg sync.WaitGroup
	lp := NewLeaderProbes(func(br *metadata.Broker) ProbeResult {
		calls.Add(1)
		<-release
		return ProbeRefused
	}, func(fn func()) { wg.Add(1); go func() { defer wg.Done(); fn() }() }, r)
	br := &metadata.Broker{ID: 2, Epoch: 10}
	start := time.Now()
	lp.Await(context.Background(), []*metadata.Broker{br}) // the probe hangs: bounded
	if waited := time.Since(start); waited < MetadataProbeWait {
		t.Fatalf("returned after %v, before the probe ended or MetadataProbeWait", waited)
	}
	p := lp.start(br) // a second request while the probe is in flight joins it
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d probes of one broker for two overlapping requests", n)
	}
	close(release)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the probe did not end")
	}
	// Checked as the waiters wake, before the probe's goroutine is known to be done: a
	// refusal recorded only after done closed would let an answer skip its hold.
	if !r.Holds(holdImage(), 2, time.Now()) {
		t.Fatal("the probe's refusal was not recorded before its waiters woke")
	}
	wg.Wait()
	if p.result != ProbeRefused || calls.Load() != 1 {
		t.Fatalf("result %v after %d probes", p.result, calls.Load())
	}
}

// A probe repeats until refused or answered, and gives up, unanswered, at its deadline.
func TestProbeUntilAnswered(t *testing.T) {
	n := 0
	got := ProbeUntilAnswered(context.Background(), func(context.Context) ProbeResult {
		if n++; n < 3 {
			return ProbeUnanswered
		}
		return ProbeRefused
	})
	if got != ProbeRefused || n != 3 {
		t.Fatalf("%v after %d asks, want refused after 3", got, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), LeaderProbeAnswerWait)
	defer cancel()
	if got := ProbeUntilAnswered(ctx, func(context.Context) ProbeResult { return ProbeUnanswered }); got != ProbeUnanswered {
		t.Fatalf("%v, want unanswered", got)
	}
}
