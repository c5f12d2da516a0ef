package replication

// The purgatory (Kafka's DelayedOperationPurgatory): requests parked until their
// partitions change — acks=all produces and WriteTxnMarkers waiting for the high
// watermark (delayed_acks_all.go), consumers' and followers' fetches waiting for
// records (delayed_fetch.go). No parked request holds a goroutine. Each watches its
// partitions with after-unlock waiters (NewAfterUnlockWaiter), so the goroutine whose
// append, follower fetch read, fsync or role change woke it tries to complete it once
// the partition's lock is released, as Kafka's purgatory completes a delayed operation
// on the thread that changed its partition; the timeout is a runtime timer
// (time.AfterFunc), the connection closing and the broker draining are
// context.AfterFunc hooks. Exactly one of them completes the request.

import (
	"context"
	"sync/atomic"
	"time"
)

// Purgatory holds one broker's delayed requests. Safe for concurrent use.
type Purgatory struct {
	// drain ends when the broker starts to stop: parked fetches answer at once.
	drain context.Context
	// acksAllEnd, when set, ends when no follower will fetch again (the whole
	// cluster is stopping): parked acks=all writes complete as at their timeout
	// (ExpireAcksAllWhen). Set before the first WaitAcksAll; read-only after.
	acksAllEnd context.Context
	kick       *leaderKick
	// parked counts the requests parked now (Parked).
	parked atomic.Int64
}

// NewPurgatory returns a purgatory whose parked fetches answer at once when drain
// ends (the broker starting to stop).
func NewPurgatory(drain context.Context) *Purgatory {
	return &Purgatory{drain: drain, kick: newLeaderKick()}
}

// Parked is the number of requests parked now, not yet completed.
func (pg *Purgatory) Parked() int64 { return pg.parked.Load() }

// LeadershipGained answers the followers' parked fetches at once: this broker became
// the leader of a partition, which they do not name yet (leader_kick.go).
func (pg *Purgatory) LeadershipGained() { pg.kick.kick() }

// delayedOp is what a delayed request does at each step; delayed runs the steps.
type delayedOp interface {
	// woken is called under partition i's lock with its state at each wake-up, and
	// once from Watch (ws.Watching). It reports whether the waiter is done with the
	// partition (dropped, as by Unwatch) and whether to try to complete the request
	// once the lock is released. It must not block or call a partition.
	woken(i int, ws WakeState) (drop, try bool)
	// try tries to complete the request and reports whether it can now, its answer
	// ready; with expired it must. It runs with no lock held, one call at a time.
	try(expired bool) bool
	// complete sends the answer try prepared: once, after the request's waiters and
	// timers are dropped.
	complete()
	// abandon answers without trying: the connection closed, or (stopping) the broker
	// drains. The caller holds the request (as try's caller).
	abandon(stopping bool)
}

// delayed is the state shared by every delayed request: its waiters, timer and hooks,
// and the run state that serialises its tries. Exactly one path completes it: the
// tries run one at a time (state idle → running; a wake-up meanwhile makes it dirty
// and the runner tries again) and the one that completes moves the state to done,
// which ends every other path.
type delayed struct {
	pg      *Purgatory
	op      delayedOp
	parts   []*Partition
	waiters []*Waiter
	// dropped[i] is set when waiters[i] dropped itself (woken's drop): no Unwatch then.
	dropped []atomic.Bool
	state   atomic.Int32 // delayedIdle, delayedRunning, delayedDirty, delayedDone
	// expired is set by the timer and the expiring hooks: the next try must complete.
	expired atomic.Bool
	// keepWatched: completed at the drain, the request leaves its waiters to the
	// partitions, which close next (unwatching tens of thousands of partitions one
	// lock at a time would only hold up the drain).
	keepWatched atomic.Bool
	poke        func() // d.run, bound once (a method value allocates per use)
	// timer and the hooks' stops are set after the waiters, which may complete the
	// request first: whoever completes stops what is set, and the registration stops
	// what it sets after a completion.
	timer atomic.Pointer[time.Timer]
	stops [3]atomic.Pointer[func() bool]
	// fsyncedWaiters: the waiters are woken also by an fsync that leaves the high
	// watermark (WaitFsynced's acks=1 writes).
	fsyncedWaiters bool
}

const (
	delayedIdle int32 = iota
	delayedRunning
	delayedDirty
	delayedDone
)

// hook is what a context ending does to a parked request.
type hook uint8

const (
	hookNone    hook = iota
	hookExpire       // try once more, then complete with what there is
	hookAbandon      // complete without trying (op.abandon)
	hookStop         // the drain: op.abandon(true), waiters left to the partitions
	// hookDrainExpire is the drain for a consumer's fetch: hookExpire, waiters left to
	// the partitions.
	hookDrainExpire
)

// watch registers d's waiters on parts; newDataOnly makes them follower-fetch waiters
// (NewAfterUnlockWaiter), woken by new records and role changes only, else they are
// woken by what a reader up to the high watermark can see: a leader append that
// leaves the high watermark (and the last stable offset) where it was does not wake
// them. Every waiter exists before the first Watch: a wake-up of one partition may
// complete the request (which drops every waiter) while the others are still being
// watched; a waiter watched after the completion drops itself.
func (d *delayed) watch(parts []*Partition, newDataOnly bool) {
	d.poke = d.run
	d.pg.parked.Add(1)
	d.parts, d.waiters, d.dropped = parts, make([]*Waiter, len(parts)), make([]atomic.Bool, len(parts))
	for i := range parts {
		w := NewAfterUnlockWaiter(newDataOnly, func(ws WakeState) (bool, func()) {
			if d.state.Load() == delayedDone {
				d.dropped[i].Store(true)
				return true, nil
			}
			drop, try := d.op.woken(i, ws)
			if drop {
				d.dropped[i].Store(true)
			}
			if try {
				return drop, d.poke
			}
			return drop, nil
		})
		w.visibleOnly = !newDataOnly
		w.fsynced = d.fsyncedWaiters
		d.waiters[i] = w
	}
	for i, p := range parts {
		p.Watch(d.waiters[i])
	}
}

// arm sets the timeout and the context hooks (at most len(d.stops)); a request
// completed meanwhile disarms them at once.
func (d *delayed) arm(timeout time.Duration, hooks ...hookOn) {
	d.timer.Store(time.AfterFunc(timeout, d.expire))
	for i, h := range hooks {
		var fn func()
		switch h.do {
		case hookExpire:
			fn = d.expire
		case hookAbandon:
			fn = func() { d.abandon(false) }
		case hookStop:
			fn = func() { d.abandon(true) }
		case hookDrainExpire:
			fn = func() { d.keepWatched.Store(true); d.expire() }
		default:
			continue
		}
		stop := context.AfterFunc(h.ctx, fn)
		d.stops[i].Store(&stop)
	}
	if d.state.Load() == delayedDone {
		d.disarm()
	}
}

// hookOn pairs a context with what its end does (arm).
type hookOn struct {
	ctx context.Context
	do  hook
}

// expire makes the request complete now with what there is.
func (d *delayed) expire() {
	d.expired.Store(true)
	d.run()
}

// run tries to complete the request, or, when a try runs elsewhere, tells it to try
// again.
func (d *delayed) run() {
	for {
		switch s := d.state.Load(); s {
		case delayedIdle:
			if !d.state.CompareAndSwap(delayedIdle, delayedRunning) {
				continue
			}
		case delayedRunning:
			if !d.state.CompareAndSwap(delayedRunning, delayedDirty) {
				continue
			}
			return
		default: // dirty (the runner tries again) or done
			return
		}
		break
	}
	for {
		if d.op.try(d.expired.Load()) {
			d.finish()
			d.op.complete()
			return
		}
		if d.state.CompareAndSwap(delayedRunning, delayedIdle) {
			return
		}
		d.state.Store(delayedRunning) // dirty: something happened during the try
	}
}

// abandon completes the request without a try (op.abandon); a try running meanwhile
// is told to complete instead, with what it finds, as after expire.
func (d *delayed) abandon(stopping bool) {
	if !d.takeIdle() {
		return
	}
	if stopping {
		d.keepWatched.Store(true)
	}
	d.finish()
	d.op.abandon(stopping)
}

// takeIdle takes the request when no try runs (state idle → running) and reports it;
// when a try runs, it marks the request expired and the try dirty, so that the runner
// tries once more and completes; when the request is done, nothing.
func (d *delayed) takeIdle() bool {
	for {
		switch s := d.state.Load(); s {
		case delayedDone:
			return false
		case delayedIdle:
			if d.state.CompareAndSwap(delayedIdle, delayedRunning) {
				return true
			}
		default:
			d.expired.Store(true)
			if d.state.CompareAndSwap(s, delayedDirty) || d.state.Load() == delayedDone {
				return false
			}
		}
	}
}

// finish marks the request completed and drops its waiters and timers; the caller
// holds the request (state running) and completes it.
func (d *delayed) finish() {
	d.state.Store(delayedDone)
	d.pg.parked.Add(-1)
	d.disarm()
	if d.keepWatched.Load() {
		return
	}
	for i, p := range d.parts {
		if !d.dropped[i].Load() {
			p.Unwatch(d.waiters[i])
		}
	}
}

// disarm stops the timer and the hooks, as far as they are set.
func (d *delayed) disarm() {
	if t := d.timer.Load(); t != nil {
		t.Stop()
	}
	for i := range d.stops {
		if stop := d.stops[i].Load(); stop != nil {
			(*stop)()
		}
	}
}

// unchanged reports whether no partition of the request changed since a read whose
// sum of the partitions' Changes() was c.
func (d *delayed) unchanged(c uint64) bool {
	var now uint64
	for _, p := range d.parts {
		now += p.Changes()
	}
	return now == c
}
