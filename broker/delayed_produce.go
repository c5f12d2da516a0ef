package broker

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/petrel-broker/petrel/replication"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// delayedProduce is an acks=all produce waiting for the high watermarks of its
// partitions (Kafka's DelayedProduce). It has no goroutine of its own: each partition
// has a callback waiter (replication.NewCallbackWaiter) that decides that partition's
// outcome on the goroutine that changed it — the one whose follower fetch advanced the
// high watermark, usually — and the partition deciding last answers, as Kafka's
// purgatory completes a delayed produce on the thread that advanced the high
// watermark. A timer (timeout_ms) and the connection's context answer the rest.
// Exactly one of them answers (finished); the response is handed to the connection's
// writer on a channel of capacity 1, so no answering goroutine blocks on, or writes to,
// a connection.
type delayedProduce struct {
	pending []producePending
	// outcome[i] is 0 while partition i waits, then its error code + 1 (1: committed).
	// Each is set once, by partition i's waiter under that partition's lock.
	outcome   []atomic.Int32
	remaining atomic.Int32 // partitions without an outcome
	finished  atomic.Bool  // the response is decided and sent
	waiters   []*replication.Waiter
	resp      kmsg.Response
	ch        chan kmsg.Response
	// timer and stopCtx (context.AfterFunc's stop) are set after the waiters, which
	// may answer first: whoever answers stops what is set, and the registration stops
	// what it sets after an answer.
	timer   atomic.Pointer[time.Timer]
	stopCtx atomic.Pointer[func() bool]
}

// startDelayedProduce registers the waiters and the timeout and returns the channel the
// response arrives on. The response may be sent before it returns (every high
// watermark already there).
func (b *Broker) startDelayedProduce(ctx context.Context, resp kmsg.Response, pending []producePending, timeout time.Duration) chan kmsg.Response {
	d := &delayedProduce{pending: pending, outcome: make([]atomic.Int32, len(pending)),
		waiters: make([]*replication.Waiter, len(pending)), resp: resp, ch: make(chan kmsg.Response, 1)}
	d.remaining.Store(int32(len(pending)))
	for i := range pending {
		d.waiters[i] = replication.NewCallbackWaiter(func(s replication.WakeState) bool { return d.decide(i, s) })
	}
	for i, p := range pending {
		p.part.Watch(d.waiters[i]) // may decide, and answer, at once
	}
	t := time.AfterFunc(timeout, func() { d.expire(kerr.RequestTimedOut.Code) })
	d.timer.Store(t)
	stop := context.AfterFunc(ctx, func() { d.expire(kerr.RequestTimedOut.Code) })
	d.stopCtx.Store(&stop)
	if d.finished.Load() {
		t.Stop()
		stop()
	}
	return d.ch
}

// disarm stops the timer and the context hook, as far as they are set.
func (d *delayedProduce) disarm() {
	if t := d.timer.Load(); t != nil {
		t.Stop()
	}
	if stop := d.stopCtx.Load(); stop != nil {
		(*stop)()
	}
}

// decide records partition i's outcome from its state, if it has one yet, and answers
// when it was the last; it reports whether the waiter is done with the partition. It
// runs under partition i's lock (replication.NewCallbackWaiter).
func (d *delayedProduce) decide(i int, s replication.WakeState) bool {
	if d.outcome[i].Load() != 0 || d.finished.Load() {
		return true
	}
	p := d.pending[i]
	var code int16
	switch {
	case s.Role != replication.Leader:
		code = kerr.NotLeaderForPartition.Code
	case s.HighWatermark < p.end:
		return false
	case s.MaximalISRSize < p.minInsync:
		// Written and committed, but the ISR fell below min.insync.replicas while the
		// request waited: Kafka's NOT_ENOUGH_REPLICAS_AFTER_APPEND.
		code = kerr.NotEnoughReplicasAfterAppend.Code
	}
	d.outcome[i].Store(int32(code) + 1)
	if d.remaining.Add(-1) == 0 {
		d.complete()
	}
	return true
}

// complete answers with every partition's outcome, unless the timer or the context
// answered first.
func (d *delayedProduce) complete() {
	if !d.finished.CompareAndSwap(false, true) {
		return
	}
	d.disarm()
	for i, p := range d.pending {
		p.resp.ErrorCode = int16(d.outcome[i].Load() - 1)
	}
	d.ch <- d.resp
	if len(d.pending) > 1 {
		// The other partitions' waiters are done too (each decided), but this runs
		// under one partition's lock: the others drop theirs at their next wake-up or
		// here, off the answering goroutine.
		go d.unwatch()
	}
}

// expire answers code for every partition still short of its high watermark (the
// timeout, or the connection closing), unless the waiters answered first.
func (d *delayedProduce) expire(code int16) {
	if !d.finished.CompareAndSwap(false, true) {
		return
	}
	d.disarm()
	d.unwatch() // no more outcomes: the ones read below are final
	for i, p := range d.pending {
		switch o := int16(d.outcome[i].Load() - 1); {
		case o > 0:
			p.resp.ErrorCode = o
		case o < 0 && p.part.State().HighWatermark < p.end:
			p.resp.ErrorCode = code
		}
	}
	d.ch <- d.resp
}

func (d *delayedProduce) unwatch() {
	for i, p := range d.pending {
		p.part.Unwatch(d.waiters[i])
	}
}
