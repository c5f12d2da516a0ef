package replication

import (
	"context"
	"sync/atomic"
	"time"
)

// AcksAllWrite is one partition's acks=all write waiting for the high watermark.
type AcksAllWrite struct {
	Partition *Partition
	End       int64 // the write's last offset + 1: the high watermark must reach it
	MinISR    int   // the effective min.insync.replicas of the append (EffectiveMinISR)
}

// WaitAcksAll parks writes (an acks=all produce, WriteTxnMarkers' markers; Kafka's
// DelayedProduce) until each has its outcome by the acks=all rule (AcksAllOutcome),
// timeout passes or ctx ends, and then calls done once with every write's outcome, in
// writes' order. At the timeout or ctx's end, a write still undecided is
// OutcomeTimedOut if its high watermark is short of its end, else OutcomeCommitted.
//
// Each partition's outcome is decided under its lock on the goroutine that changed it
// (the follower fetch that advanced the high watermark, usually), and done runs on the
// goroutine deciding last, once that partition's lock is released — or on the timer's,
// or on WaitAcksAll's caller when every outcome is there already. done must not block
// for long.
func (pg *Purgatory) WaitAcksAll(ctx context.Context, writes []AcksAllWrite, timeout time.Duration, done func([]Outcome)) {
	pg.waitWrites(ctx, writes, timeout, false, done)
}

// waitWrites is WaitAcksAll, or with fsynced WaitFsynced (acks=1 writes decided by the
// leader's own fsync, AcksOneOutcome).
func (pg *Purgatory) waitWrites(ctx context.Context, writes []AcksAllWrite, timeout time.Duration, fsynced bool, done func([]Outcome)) {
	a := &acksAllWait{writes: writes, outcome: make([]atomic.Int32, len(writes)), fsynced: fsynced, done: done}
	a.remaining.Store(int32(len(writes)))
	a.pg, a.op = pg, a
	a.fsyncedWaiters = fsynced
	parts := make([]*Partition, len(writes))
	for i, w := range writes {
		parts[i] = w.Partition
	}
	a.watch(parts, false) // may decide, and complete, at once
	if pg.acksAllEnd != nil {
		a.arm(timeout, hookOn{ctx, hookExpire}, hookOn{pg.acksAllEnd, hookExpire})
	} else {
		a.arm(timeout, hookOn{ctx, hookExpire})
	}
}

// ExpireAcksAllWhen makes every acks=all write parked with WaitAcksAll complete as at
// its timeout once end ends: OutcomeCommitted where the high watermark has passed it,
// else OutcomeTimedOut, never committed early. The broker ends it when the whole
// cluster is stopping: no follower will fetch again, and a write would otherwise wait
// out its whole timeout in the stopping leader's drain. Call it before the first
// WaitAcksAll.
func (pg *Purgatory) ExpireAcksAllWhen(end context.Context) { pg.acksAllEnd = end }

// acksAllWait is a parked WaitAcksAll.
type acksAllWait struct {
	delayed
	writes []AcksAllWrite
	// outcome[i] is 0 while write i waits, then its Outcome + 1. Each is set once, by
	// partition i's waiter under that partition's lock.
	outcome   []atomic.Int32
	remaining atomic.Int32 // writes without an outcome
	// fsynced: acks=1 writes (WaitFsynced), decided by AcksOneOutcome.
	fsynced bool
	final   []Outcome // try's answer
	done    func([]Outcome)
}

// woken decides write i's outcome from its partition's state, if it has one yet.
func (a *acksAllWait) woken(i int, ws WakeState) (drop, try bool) {
	if a.outcome[i].Load() != 0 {
		return true, false
	}
	w := a.writes[i]
	o := AcksAllOutcome(ws, w.End, w.MinISR)
	if a.fsynced {
		o = AcksOneOutcome(ws, w.End)
	}
	if o == OutcomeWaiting {
		return false, false
	}
	a.outcome[i].Store(int32(o) + 1)
	return true, a.remaining.Add(-1) == 0
}

// try completes when every write has its outcome, or, expired, with the timed-out
// rule for the rest.
func (a *acksAllWait) try(expired bool) bool {
	if a.remaining.Load() > 0 && !expired {
		return false
	}
	a.final = make([]Outcome, len(a.writes))
	for i, w := range a.writes {
		switch o := a.outcome[i].Load(); {
		case o > 0:
			a.final[i] = Outcome(o - 1)
		case a.reached(w.Partition) < w.End:
			a.final[i] = OutcomeTimedOut
		default:
			a.final[i] = OutcomeCommitted
		}
	}
	return true
}

// reached is what the partition counts of a write: its high watermark, or for an acks=1
// write its leader's fsynced end.
func (a *acksAllWait) reached(p *Partition) int64 {
	if a.fsynced {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.localEndLocked()
	}
	return p.State().HighWatermark
}

func (a *acksAllWait) complete() { a.done(a.final) }

// abandon is never called: WaitAcksAll's hooks expire.
func (a *acksAllWait) abandon(bool) {
	a.try(true)
	a.complete()
}
