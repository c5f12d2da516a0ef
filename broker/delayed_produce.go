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
// has an after-unlock waiter (replication.NewAfterUnlockWaiter) that decides that
// partition's outcome on the goroutine that changed it — the one whose follower fetch
// advanced the high watermark, usually — and the partition deciding last answers once
// that partition's lock is released, as Kafka's purgatory completes a delayed produce
// on the thread that advanced the high watermark. The answer goes to the request's
// rpc.Deferred, which writes it to the client's connection on that same goroutine when
// nothing is ahead of it there, without waking the connection's writer first. A timer
// (timeout_ms) and the connection's context answer the rest. Exactly one of them
// answers (finished); none blocks on, or waits for, a connection.
type delayedProduce struct {
	pending []producePending
	// outcome[i] is 0 while partition i waits, then its error code + 1 (1: committed).
	// Each is set once, by partition i's waiter under that partition's lock.
	outcome   []atomic.Int32
	remaining atomic.Int32 // partitions without an outcome
	finished  atomic.Bool  // the response is decided and sent
	waiters   []*replication.Waiter
	resp      kmsg.Response
	out       responder
	answer    func() // d.complete, bound once
	// timer and stopCtx (context.AfterFunc's stop) are set after the waiters, which
	// may answer first: whoever answers stops what is set, and the registration stops
	// what it sets after an answer.
	timer   atomic.Pointer[time.Timer]
	stopCtx atomic.Pointer[func() bool]
}

// responder delivers a delayed response: the request's *rpc.Deferred (a channel in
// tests).
type responder interface {
	Complete(kmsg.Response) bool
}

// startDelayedProduce registers the waiters and the timeout; the response goes to out,
// possibly before it returns (every high watermark already there).
func (b *Broker) startDelayedProduce(ctx context.Context, resp kmsg.Response, pending []producePending, timeout time.Duration, out responder) {
	d := &delayedProduce{pending: pending, outcome: make([]atomic.Int32, len(pending)),
		waiters: make([]*replication.Waiter, len(pending)), resp: resp, out: out}
	d.answer = d.complete
	d.remaining.Store(int32(len(pending)))
	for i := range pending {
		d.waiters[i] = replication.NewAfterUnlockWaiter(false, func(s replication.WakeState) (bool, func()) { return d.decide(i, s) })
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

// decide records partition i's outcome from its state, if it has one yet; it reports
// whether the waiter is done with the partition and, when this was the last outcome,
// returns the answer to run once the partition's lock is released. It runs under
// partition i's lock (replication.NewAfterUnlockWaiter).
func (d *delayedProduce) decide(i int, s replication.WakeState) (bool, func()) {
	if d.outcome[i].Load() != 0 || d.finished.Load() {
		return true, nil
	}
	p := d.pending[i]
	code, decided := acksAllCode(replication.AcksAllOutcome(s, p.end, p.minInsync))
	if !decided {
		return false, nil
	}
	d.outcome[i].Store(int32(code) + 1)
	if d.remaining.Add(-1) == 0 {
		return true, d.answer
	}
	return true, nil
}

// complete answers with every partition's outcome, unless the timer or the context
// answered first. No partition lock is held.
func (d *delayedProduce) complete() {
	if !d.finished.CompareAndSwap(false, true) {
		return
	}
	d.disarm()
	for i, p := range d.pending {
		p.resp.ErrorCode = int16(d.outcome[i].Load() - 1)
	}
	d.out.Complete(d.resp)
	if len(d.pending) > 1 {
		// The other partitions' waiters are done too (each decided): drop them now
		// rather than at their next wake-up.
		d.unwatch()
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
	d.out.Complete(d.resp)
}

func (d *delayedProduce) unwatch() {
	for i, p := range d.pending {
		p.part.Unwatch(d.waiters[i])
	}
}
