package replication

// A follower's fetch session on the leader, O(changed) per fetch: each partition of
// the session keeps one standing waiter for the life of its place in the session
// (not one registered and removed at every fetch), which notes the partition dirty at
// every change — an append, a high watermark or log start move, a truncation, a role
// or leader epoch change, the replica closing — and, for anything but a high
// watermark or log start move alone, wakes the session's parked fetch. An incremental
// fetch reads only the dirty partitions and those it names; a partition leaves the
// dirty set only when a read found the follower idle at the log end (no error, no
// records, no divergence, nothing left out by max_bytes or a quota), so a partition
// whose records an answer left out is read again at the next fetch. Parking costs one
// registration on the session.
//
// The follower's caught-up time (ISR, replica.lag.time.max.ms) stays fresh for the
// partitions the session does not read: the session's clock is the time of its latest
// fetch, and a read that found the follower at the log end points the follower's state
// at it (followerState.clock), until the partition changes, as in Kafka, where a fetch
// at the log end marks the follower caught up for every partition of its session.
//
// Lock order: the cache's mu, a session's mu, then its watch's mu; a partition's lock,
// then a watch's mu (the waiters). Nothing is called with a watch's mu held.

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// sessionWatch is a follower session's standing watch over its partitions.
type sessionWatch struct {
	// clock is the time of the session's latest fetch (Unix nanoseconds); replica is
	// the follower's broker id.
	clock   *atomic.Int64
	replica int32

	mu    sync.Mutex
	dirty []*cachedFetchPartition // each with cp.dirty set
	// brokerEpoch is the broker epoch the session's latest fetch named (KIP-903), -1
	// for none.
	brokerEpoch int64
	pokes       uint64   // wake-ups that woke (or would wake) a parked fetch
	parked      *delayed // the session's parked fetch, or nil
	closed      bool     // the session left the cache: the waiters drop
	// all is every partition of the session with a standing waiter.
	all map[*cachedFetchPartition]struct{}
}

func newSessionWatch(clock *atomic.Int64, replica int32, brokerEpoch int64) *sessionWatch {
	if clock == nil {
		clock = new(atomic.Int64)
	}
	return &sessionWatch{clock: clock, replica: replica, brokerEpoch: brokerEpoch, all: map[*cachedFetchPartition]struct{}{}}
}

// noteBrokerEpoch records the broker epoch a fetch of the session named and, when it
// differs from the one before (the follower registered again and kept its session),
// marks every partition dirty: the leader learns a follower's epoch from its reads
// (Options.ReplicaEligible), and an idle partition would otherwise keep the old one.
func (sw *sessionWatch) noteBrokerEpoch(epoch int64) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if epoch == sw.brokerEpoch {
		return
	}
	sw.brokerEpoch = epoch
	for cp := range sw.all {
		sw.markLocked(cp)
	}
}

// markLocked notes cp dirty; the caller holds sw.mu.
func (sw *sessionWatch) markLocked(cp *cachedFetchPartition) {
	if !cp.dirty {
		cp.dirty = true
		sw.dirty = append(sw.dirty, cp)
	}
}

// mark notes cp dirty.
func (sw *sessionWatch) mark(cp *cachedFetchPartition) {
	sw.mu.Lock()
	sw.markLocked(cp)
	sw.mu.Unlock()
}

// waiter is cp's standing waiter on its replica. It runs under the replica's lock.
func (sw *sessionWatch) waiter(cp *cachedFetchPartition, lp *Partition, idleAt uint64, idle bool) *Waiter {
	var w *Waiter
	w = NewAfterUnlockWaiter(true, func(ws WakeState) (bool, func()) {
		sw.mu.Lock()
		defer sw.mu.Unlock()
		if sw.closed || cp.w != w {
			return true, nil // the session or the partition's place in it has gone
		}
		if ws.Watching {
			// Anything since the read that attached it counts as a change.
			if ws.Changes != idleAt || !idle {
				sw.markLocked(cp)
			}
			return false, nil
		}
		sw.markLocked(cp)
		if ws.Progress {
			return false, nil // the follower learns it with its next answer, as in Kafka
		}
		sw.pokes++
		if d := sw.parked; d != nil {
			return false, d.poke
		}
		return false, nil
	})
	w.everyWake = true
	return w
}

// takeLocked takes the dirty partitions still in session s, in session order, and the
// wake-up count as of the take; the caller holds s.mu.
func (sw *sessionWatch) takeLocked(s *fetchSession) ([]*cachedFetchPartition, uint64) {
	sw.mu.Lock()
	d, pokes := sw.dirty, sw.pokes
	sw.dirty = nil
	for _, cp := range d {
		cp.dirty = false
	}
	sw.mu.Unlock()
	out := d[:0]
	for _, cp := range d {
		if s.parts[cp.key] == cp {
			out = append(out, cp)
		}
	}
	slices.SortFunc(out, func(a, b *cachedFetchPartition) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	return out, pokes
}

// settle applies a read of parts (in response order, a.marks) to the watch: a
// partition is clean only when the read found it idle, else dirty again; one read
// from another replica than the one watched (or none watched yet) moves its waiter.
// answered is false for a read that is not the answer (a parked fetch's read that
// does not complete it): its partitions are read again, since what it found (a new
// high watermark) is still to tell.
func (sw *sessionWatch) settle(parts []*cachedFetchPartition, a *FetchAnswer, answered bool) {
	type move struct {
		from, to *Partition
		w, old   *Waiter
	}
	var moves []move
	sw.mu.Lock()
	for i, cp := range parts {
		if cp == nil || cp.forgotten {
			// Named twice in a full fetch (watched once), or forgotten by a request of
			// the same session meanwhile: watching it again would leak its waiter.
			continue
		}
		var m readMark
		if i < len(a.marks) {
			m = a.marks[i]
		}
		if !sw.closed && m.lp != nil && m.lp != cp.lp {
			mv := move{from: cp.lp, to: m.lp, old: cp.w}
			mv.w = sw.waiter(cp, m.lp, m.changes, m.idle && answered)
			cp.lp, cp.w = m.lp, mv.w
			sw.all[cp] = struct{}{}
			moves = append(moves, mv)
			continue
		}
		if !answered || !m.idle {
			sw.markLocked(cp)
		}
	}
	sw.mu.Unlock()
	for _, mv := range moves {
		if mv.from != nil {
			mv.from.Unwatch(mv.old)
		}
		mv.to.Watch(mv.w)
	}
}

// park makes d the session's parked fetch and reports whether a wake-up came since the
// take that counted pokes: d must then try at once.
func (sw *sessionWatch) park(d *delayed, pokes uint64) bool {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.parked = d
	return sw.pokes != pokes
}

// unpark forgets d as the parked fetch.
func (sw *sessionWatch) unpark(d *delayed) {
	sw.mu.Lock()
	if sw.parked == d {
		sw.parked = nil
	}
	sw.mu.Unlock()
}

// forget drops cp's waiter (cp left the session); the caller holds the session's mu
// and removes the waiter from its replica later (unwatchAll), with no lock held.
func (sw *sessionWatch) forget(cp *cachedFetchPartition) watchedPartition {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	wp := watchedPartition{cp.lp, cp.w, sw}
	cp.lp, cp.w, cp.forgotten = nil, nil, true
	delete(sw.all, cp)
	return wp
}

// close ends the watch (the session left the cache) and removes its waiters from
// their replicas on a goroutine of their own: a session may hold tens of thousands.
func (sw *sessionWatch) close() {
	sw.mu.Lock()
	if sw.closed {
		sw.mu.Unlock()
		return
	}
	sw.closed = true
	gone := make([]watchedPartition, 0, len(sw.all))
	for cp := range sw.all {
		gone = append(gone, watchedPartition{cp.lp, cp.w, sw})
	}
	sw.all = nil
	sw.mu.Unlock()
	if len(gone) > 0 {
		go unwatchAll(gone)
	}
}

// watchedPartition is a standing waiter, the replica it watches and its session's
// watch.
type watchedPartition struct {
	lp *Partition
	w  *Waiter
	sw *sessionWatch
}

// unwatchAll removes the waiters of partitions that left their session (or whose
// session ended), and ends the follower's idle clock on each: no later fetch of the
// session counts for it.
func unwatchAll(ws []watchedPartition) {
	for _, wp := range ws {
		if wp.lp != nil {
			wp.lp.Unwatch(wp.w)
			wp.lp.settleIdleFollower(wp.sw.replica, wp.sw.clock)
		}
	}
}

// watched reports whether fc is an incremental fetch of a watched (follower) session.
func (fc *FetchContext) watched() bool {
	return fc.kind == fetchIncremental && fc.session.watch != nil
}

// fetchWatched answers an incremental fetch of a follower session: it reads the
// partitions named or changed since the session's last read, and parks on the session
// alone.
func (s *FetchServer) fetchWatched(ctx context.Context, r *kmsg.FetchRequest, fc *FetchContext, denied func(topic string) bool, park func() func(kmsg.Response), hints func(*kmsg.FetchResponse)) kmsg.Response {
	sw := fc.session.watch
	now := time.Now()
	unwatchAll(fc.forgotten)
	fc.forgotten = nil
	plan := fc.Request(r)
	resp, bytes, errored := s.read(plan, denied, sw.clock)
	// Every partition of the session not read is as at its last read, which found
	// the follower at the log end: this fetch is one at the log end for all of them.
	sw.clock.Store(now.UnixNano())
	wait := time.Duration(r.MaxWaitMillis) * time.Millisecond
	if errored || bytes >= int(r.MinBytes) || resp.behind || wait <= 0 {
		sw.settle(fc.parts, resp, true)
		s.Sessions.Finish(fc, plan, resp, time.Now().UnixMilli())
		s.Source.Fetched(r, resp, bytes)
		hints(resp.FetchResponse)
		return resp
	}
	sw.settle(fc.parts, resp, false)
	resp.Release()
	complete := park()
	op := &watchedFetch{s: s, r: r, fc: *fc, denied: denied, hints: hints, send: complete, minBytes: max(int(r.MinBytes), 1)}
	d := &op.delayed
	d.pg, d.op = s.Purgatory, op
	d.watch(nil, true)
	if sw.park(d, fc.pokes) {
		d.run()
	}
	d.arm(wait, hookOn{ctx, hookAbandon}, hookOn{s.Purgatory.drain, hookStop}, hookOn{s.Purgatory.kick.current(), hookExpire})
	return nil
}

// watchedFetch is a follower session's parked fetch (delayedOp): woken by the
// session's waiters, it reads the session's dirty partitions.
type watchedFetch struct {
	delayed
	s        *FetchServer
	r        *kmsg.FetchRequest
	fc       FetchContext
	denied   func(topic string) bool
	hints    func(*kmsg.FetchResponse)
	send     func(kmsg.Response)
	minBytes int
	// The answer try prepared: its parts, request plan and read.
	parts []*cachedFetchPartition
	plan  *kmsg.FetchRequest
	read  *FetchAnswer
}

func (sf *watchedFetch) woken(int, WakeState) (bool, bool) { return false, true }

func (sf *watchedFetch) try(expired bool) bool {
	session := sf.fc.session
	session.mu.Lock()
	parts, _ := session.watch.takeLocked(session)
	session.mu.Unlock()
	if len(parts) == 0 && !expired {
		return false
	}
	fc := sf.fc
	fc.parts = parts
	plan := fc.Request(sf.r)
	a, n, errored := sf.s.read(plan, sf.denied, session.watch.clock)
	if errored || n >= sf.minBytes || a.behind || expired {
		session.watch.settle(parts, a, true)
		sf.parts, sf.plan, sf.read = parts, plan, a
		return true
	}
	session.watch.settle(parts, a, false)
	a.Release()
	return false
}

func (sf *watchedFetch) complete() {
	sf.fc.session.watch.unpark(&sf.delayed)
	fc := sf.fc
	fc.parts = sf.parts
	sf.s.Sessions.Finish(&fc, sf.plan, sf.read, time.Now().UnixMilli())
	sf.s.Source.Fetched(sf.r, sf.read, -1)
	sf.hints(sf.read.FetchResponse)
	sf.send(sf.read)
}

// abandon answers nil (the connection closed) or, at the drain, NOT_LEADER_OR_FOLLOWER
// for every partition of the session (stoppingFollowerFetch).
func (sf *watchedFetch) abandon(stopping bool) {
	session := sf.fc.session
	session.watch.unpark(&sf.delayed)
	if !stopping {
		sf.send(nil)
		return
	}
	fc := sf.fc
	session.mu.Lock()
	fc.parts = fc.parts[:0:0]
	for cp := session.head; cp != nil; cp = cp.next {
		fc.parts = append(fc.parts, cp)
	}
	session.mu.Unlock()
	plan := fc.Request(sf.r)
	a := stoppingFollowerFetch(plan)
	sf.s.Sessions.Finish(&fc, plan, a, time.Now().UnixMilli())
	sf.hints(a.FetchResponse)
	sf.send(a)
}
