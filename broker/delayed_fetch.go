package broker

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// delayedFollowerFetch is a follower's Fetch parked until new records arrive (Kafka's
// DelayedFetch for a replica). It has no goroutine: each partition has an after-unlock
// waiter (replication.NewAfterUnlockWaiter) and the goroutine that appended — the
// produce handler, before its fsync — reads the fetch again and completes its
// rpc.Deferred, which writes the answer straight to the follower's connection when
// nothing is ahead of it there. So a record leaves for the followers from the
// goroutine that read it from the producer, as in `petrel perf floor`, instead of
// waking a parked goroutine per follower that then wakes the connection's writer. A
// timer (max_wait_ms), the connection's context and the broker's drain answer the
// rest.
//
// Exactly one answer: the reads run one at a time (state: idle → running, a wake-up
// meanwhile makes it dirty and the runner reads again) and the one that answers moves
// the state to done, which ends every other path.
type delayedFollowerFetch struct {
	b   *Broker
	r   *kmsg.FetchRequest
	out responder // the request's rpc.Deferred
	// readFetch reads the fetch again (b.readFetch of the session's plan; tests
	// replace it).
	readFetch func() (*fetchAnswer, int, bool)
	// answering, when set, runs on the answer before it is sent: the fetch session's
	// bookkeeping (fetchSessionCache.finish) and the byte counts.
	answering func(*fetchAnswer)
	// last is the latest read that found no records (fetchAnswer.reusable), or nil:
	// when the wait ends with no partition changed since, it is the answer, without a
	// read again of every partition (at idle most of a leader's work for its
	// followers). Only the goroutine holding the read (state running) touches it.
	last    *fetchAnswer
	parts   []*localPartition
	waiters []*replication.Waiter
	state   atomic.Int32 // fetchIdle, fetchRunning, fetchDirty, fetchDone
	// expired is set by the timer and the drain: the next read answers whatever it
	// finds.
	expired atomic.Bool
	poke    func() // f.read, bound once (a method value allocates per use)
	// timer, stopCtx and stopDrain are set after the waiters, which may answer
	// first: whoever answers stops what is set, and the registration stops what it
	// sets after an answer.
	timer     atomic.Pointer[time.Timer]
	stopCtx   atomic.Pointer[func() bool]
	stopDrain atomic.Pointer[func() bool]
	// stopKick stops the hook that answers the fetch when this broker becomes the
	// leader of a partition (fetch_kick.go).
	stopKick atomic.Pointer[func() bool]
}

const (
	fetchIdle int32 = iota
	fetchRunning
	fetchDirty
	fetchDone
)

// startDelayedFollowerFetch parks r (a follower's fetch whose first read, first,
// found no records) and returns its result. plan is what it reads (the session's
// partitions for an incremental fetch, fc its session context); denied is
// fetchDenied's answer.
func (b *Broker) startDelayedFollowerFetch(ctx context.Context, req *rpc.Request, fc *fetchContext, plan *kmsg.FetchRequest, denied func(string) bool, wait time.Duration, first *fetchAnswer) rpc.Result {
	d := req.Defer()
	r := req.Body.(*kmsg.FetchRequest)
	f := &delayedFollowerFetch{b: b, r: plan, out: d,
		readFetch: func() (*fetchAnswer, int, bool) { return b.readFetch(plan, denied) },
		answering: func(resp *fetchAnswer) {
			b.fetchSessions.finish(fc, plan, resp, time.Now().UnixMilli())
			b.countFetched(r, resp, -1)
		}}
	changes := first.changes
	parts, gone := b.fetchPartitions(plan, denied)
	if !gone {
		f.last = first.reusable()
	} else {
		first.Release()
	}
	f.start(ctx, b.drainCtx, parts, wait, changes, gone)
	f.expireOnKick(b.fetchKick)
	return rpc.RespondDeferred(d)
}

// expireOnKick answers the parked fetch with what it has at k's next kick: this broker
// became the leader of a partition the fetch does not name (fetch_kick.go).
func (f *delayedFollowerFetch) expireOnKick(k *followerFetchKick) {
	stop := context.AfterFunc(k.current(), f.expire)
	f.stopKick.Store(&stop)
	if f.state.Load() == fetchDone {
		stop()
	}
}

// start watches parts and arms the timer and the hooks. changes is the first read's
// sum of the partitions' Changes(); gone says a partition has gone since.
func (f *delayedFollowerFetch) start(ctx, drain context.Context, parts []*localPartition, wait time.Duration, changes uint64, gone bool) {
	f.poke = f.read
	// Every waiter exists before the first Watch: a wake-up of one partition may answer
	// (finish reads parts and waiters) while the others are still being watched; a
	// waiter watched after the answer drops itself in Watch (woken).
	f.parts, f.waiters = parts, make([]*replication.Waiter, len(parts))
	for i := range parts {
		f.waiters[i] = replication.NewAfterUnlockWaiter(true, f.woken)
	}
	var now uint64
	for i, lp := range parts {
		lp.Watch(f.waiters[i])
		now += lp.Changes() // after Watch: any later change wakes the fetch
	}
	// A change between the first read and Watch woke nobody: read once more, or the
	// fetch would wait max_wait_ms for nothing. Unchanged counts prove there was none.
	if gone || now != changes {
		f.read()
	}
	t := time.AfterFunc(wait, f.expire)
	f.timer.Store(t)
	stop := context.AfterFunc(ctx, f.abandon)
	f.stopCtx.Store(&stop)
	stopDrain := context.AfterFunc(drain, f.drained)
	f.stopDrain.Store(&stopDrain)
	if f.state.Load() == fetchDone {
		f.disarm()
	}
}

// woken is every partition's waiter callback, under that partition's lock: the read
// runs once the lock is released (on the appending goroutine for a produce).
func (f *delayedFollowerFetch) woken(s replication.WakeState) (bool, func()) {
	if s.Watching || f.state.Load() == fetchDone {
		return f.state.Load() == fetchDone, nil
	}
	return false, f.poke
}

// expire makes the fetch answer now with what there is (max_wait_ms, the drain).
func (f *delayedFollowerFetch) expire() {
	f.expired.Store(true)
	f.read()
}

// read reads the fetch again and answers when there are records, a partition must be
// answered at once, or the fetch expired; a read already running elsewhere is told to
// read again instead.
func (f *delayedFollowerFetch) read() {
	for {
		switch s := f.state.Load(); s {
		case fetchIdle:
			if !f.state.CompareAndSwap(fetchIdle, fetchRunning) {
				continue
			}
		case fetchRunning:
			if !f.state.CompareAndSwap(fetchRunning, fetchDirty) {
				continue
			}
			return
		default: // dirty (the runner reads again) or done
			return
		}
		break
	}
	for {
		expired := f.expired.Load()
		if expired && f.last != nil && f.unchanged(f.last.changes) {
			resp := f.last
			f.last = nil
			f.answer(resp)
			return
		}
		resp, bytes, errored := f.readFetch()
		if errored || bytes >= max(int(f.r.MinBytes), 1) || resp.behind || expired {
			f.answer(resp)
			return
		}
		f.last.Release()
		f.last = resp.reusable()
		if f.state.CompareAndSwap(fetchRunning, fetchIdle) {
			return
		}
		f.state.Store(fetchRunning) // dirty: something happened during the read
	}
}

// drained answers the fetch when the broker starts to stop: NOT_LEADER_OR_FOLLOWER
// for every partition (stoppingFollowerFetch), read from nothing and without
// unwatching its partitions, which close next — reading and unwatching each of a
// follower's tens of thousands of partitions would only hold up the drain. A read
// running meanwhile answers instead, with what it finds, as after expire.
func (f *delayedFollowerFetch) drained() {
	if !f.takeIdle() {
		return
	}
	f.state.Store(fetchDone)
	f.disarm()
	f.dropLast()
	resp := stoppingFollowerFetch(f.r)
	if f.answering != nil {
		f.answering(resp)
	}
	f.out.Complete(resp)
}

// takeIdle takes the read when none runs (state idle → running) and reports it; when
// a read runs, it marks the fetch expired and the read dirty, so that the runner reads
// once more and answers; when the fetch is done, nothing.
func (f *delayedFollowerFetch) takeIdle() bool {
	for {
		switch s := f.state.Load(); s {
		case fetchDone:
			return false
		case fetchIdle:
			if f.state.CompareAndSwap(fetchIdle, fetchRunning) {
				return true
			}
		default:
			f.expired.Store(true)
			if f.state.CompareAndSwap(s, fetchDirty) || f.state.Load() == fetchDone {
				return false
			}
		}
	}
}

// dropLast releases the kept last read; the caller holds the read.
func (f *delayedFollowerFetch) dropLast() {
	f.last.Release()
	f.last = nil
}

// unchanged reports whether no partition of the fetch changed since a read whose sum
// of the partitions' Changes() was c.
func (f *delayedFollowerFetch) unchanged(c uint64) bool {
	var now uint64
	for _, lp := range f.parts {
		now += lp.Changes()
	}
	return now == c
}

// answer ends the fetch with resp; the caller holds the read (state running).
func (f *delayedFollowerFetch) answer(resp *fetchAnswer) {
	f.finish()
	if f.answering != nil {
		f.answering(resp)
	}
	f.out.Complete(resp)
}

// abandon ends the fetch without a read: its connection has closed. A read running
// meanwhile answers (to the closed connection).
func (f *delayedFollowerFetch) abandon() {
	if !f.takeIdle() {
		return
	}
	f.finish()
	f.dropLast()
	f.out.Complete(nil)
}

// finish marks the fetch answered and drops its waiters and timers; the caller holds
// the read (state running) and answers.
func (f *delayedFollowerFetch) finish() {
	f.state.Store(fetchDone)
	f.disarm()
	for i, lp := range f.parts {
		lp.Unwatch(f.waiters[i])
	}
}

// disarm stops the timer and the context hooks, as far as they are set.
func (f *delayedFollowerFetch) disarm() {
	if t := f.timer.Load(); t != nil {
		t.Stop()
	}
	if stop := f.stopCtx.Load(); stop != nil {
		(*stop)()
	}
	if stop := f.stopDrain.Load(); stop != nil {
		(*stop)()
	}
	if stop := f.stopKick.Load(); stop != nil {
		(*stop)()
	}
}
