package replication

import "slices"

// Waiter is woken when a watched partition's high watermark or log end offset moves or
// its role changes. Its channel has room for one wake-up; wake-ups coalesce.
type Waiter struct {
	C chan struct{}
	// newDataOnly: a move of the high watermark or of a log start offset alone does
	// not wake it (NewAfterUnlockWaiter's followerFetch).
	newDataOnly bool
	// visibleOnly: a leader append that leaves the high watermark where it was does not
	// wake it (the purgatory's consumer fetches and acks=all waits: nothing they read,
	// up to the high watermark, has changed).
	visibleOnly bool
	// after, when set, is called instead of the channel send (NewAfterUnlockWaiter).
	after func(WakeState) (drop bool, then func())
	// everyWake: after is called at every wake-up, a high watermark or log start move
	// alone included (WakeState.Progress tells it): a follower session's standing
	// waiter (fetch_session_watch.go), which notes every change and wakes a parked
	// fetch only for new records or a role change.
	everyWake bool
	// fsynced: an fsync that moves the leader's local end without the high watermark
	// wakes it too (wakeFsyncedLocked: acks=1 writes waiting with WaitFsynced).
	fsynced bool
}

// WakeState is what an after-unlock waiter is told at each wake-up: the partition's role,
// high watermark and maximal ISR size (State.MaximalISRSize), read under its lock.
type WakeState struct {
	Role           Role
	HighWatermark  int64
	MaximalISRSize int
	// LogFailed: the log is failed for good (State.LogFailed).
	LogFailed bool
	// Watching is set for the call from Watch itself (NewAfterUnlockWaiter).
	Watching bool
	// Progress is set for a wake-up by a high watermark or log start move alone.
	Progress bool
	// Changes is the partition's Changes() with this wake-up counted.
	Changes uint64
	// LocalEnd is the leader's own log end as the high watermark counts it: the log
	// end offset, or with SyncEveryAppend only what is fsynced (AcksOneOutcome).
	LocalEnd int64
}

// NewAfterUnlockWaiter returns a waiter that, instead of a channel send, calls fn with
// the partition's state under its lock at every wake-up (and once from Watch, with
// Watching set, so that nothing that happened before Watch is missed); fn must not
// block, take a partition lock or call a partition, and when it returns drop the
// partition drops the waiter, as Unwatch would. The waiter then runs the function fn returns, if any, once the lock is
// released: on the goroutine that changed the partition when that is a leader append
// by the produce handler (AppendValidatedAsLeader, AppendAsLeaderVerified; for
// AppendForAcksAll and AppendForAcksOne once the handler has appended every partition
// of its request, Wakes), a follower
// fetch read (ReadForFollowerHeld, which advances the high watermark) or the fsync that
// advances it; on a new goroutine at every other wake-up; on Watch's caller for the
// call from Watch. So the goroutine whose append or fetch made a delayed response
// ready writes it itself (rpc.Deferred), with no goroutine hand-off. then must not
// assume any lock is held, may take partition locks and must not block for long (it
// writes to the network only without waiting). With followerFetch set, a move of the
// high watermark or of a log start offset alone does not wake it: a parked follower
// fetch can answer only with new records, so waking it for those would just make it
// read again, empty, on the leader's critical path (as in Kafka, a follower learns the
// new high watermark with its next answer). Its C is nil; it watches one partition.
func NewAfterUnlockWaiter(followerFetch bool, fn func(WakeState) (drop bool, then func())) *Waiter {
	return &Waiter{after: fn, newDataOnly: followerFetch}
}

// takeCollectedLocked ends the collection of after-unlock functions and returns them.
func (p *Partition) takeCollectedLocked() []func() {
	fns := p.collected
	p.collected, p.collecting = nil, false
	return fns
}

// runAfterUnlock runs the collected after-unlock functions; no partition lock is held.
func runAfterUnlock(fns []func()) {
	for _, f := range fns {
		f()
	}
}

// NewWaiter returns a waiter with an empty channel.
func NewWaiter() *Waiter { return &Waiter{C: make(chan struct{}, 1)} }

// Wake queues a wake-up unless one is already pending.
func (w *Waiter) Wake() {
	select {
	case w.C <- struct{}{}:
	default:
	}
}

// Watch adds w to the partition's waiters.
func (p *Partition) Watch(w *Waiter) {
	p.mu.Lock()
	if p.watchers == nil { // allocated on first use: most replicas never have a waiter
		p.watchers = map[*Waiter]struct{}{}
	}
	p.watchers[w] = struct{}{}
	var then func()
	if w.after != nil {
		ws := p.wakeStateLocked()
		ws.Watching = true
		var drop bool
		if drop, then = w.after(ws); drop {
			delete(p.watchers, w)
		}
	}
	p.mu.Unlock()
	if then != nil {
		then()
	}
}

// Unwatch removes w.
func (p *Partition) Unwatch(w *Waiter) {
	p.mu.Lock()
	delete(p.watchers, w)
	p.mu.Unlock()
}

// LeaderHighWatermark returns the high watermark while this replica leads and -1
// otherwise, without taking the partition lock: a produce waiting for acks=all checks it
// on every wake-up, and the lock may be held by an append's write. It is current as of
// the last wake-up of the partition's waiters.
func (p *Partition) LeaderHighWatermark() int64 { return p.leaderHighWatermarkNow.Load() }

// Changes counts the partition's wake-ups so far. A FetchResult carries its value as of
// the read (FetchResult.Changes): a reader that finds it unchanged after registering a
// waiter knows that nothing it could read again has happened since.
func (p *Partition) Changes() uint64 { return p.changes.Load() }

// wakeCause is what moved a partition, for the waiters that ignore some moves.
type wakeCause uint8

const (
	wakeAll      wakeCause = iota // anything: a role, ISR or log change
	wakeProgress                  // a high watermark or log start move alone
	wakeAppend                    // a leader append that left the high watermark
)

// notifyLocked wakes every waiter.
func (p *Partition) notifyLocked() { p.wakeLocked(wakeAll) }

// notifyProgressLocked wakes the waiters of a high watermark or log start move alone:
// every waiter but those of parked follower fetches.
func (p *Partition) notifyProgressLocked() { p.wakeLocked(wakeProgress) }

// notifyAppendLocked wakes the waiters of a leader append that left the high
// watermark where it was: every waiter but the visibleOnly ones.
func (p *Partition) notifyAppendLocked() { p.wakeLocked(wakeAppend) }

func (p *Partition) wakeLocked(cause wakeCause) {
	progressOnly := cause == wakeProgress
	if p.role == Leader {
		p.leaderHighWatermarkNow.Store(p.highWatermark)
	} else {
		p.leaderHighWatermarkNow.Store(-1)
	}
	p.changes.Add(1)
	p.positionVersion.Add(1)
	if !progressOnly {
		p.settleIdleFollowersLocked() // the log end may have moved: idle clocks end here
	}
	var ws WakeState
	haveState := false
	for w := range p.watchers {
		switch {
		case w.after != nil:
			if !w.everyWake && ((progressOnly && w.newDataOnly) || (cause == wakeAppend && w.visibleOnly)) {
				continue
			}
			if !haveState {
				ws, haveState = p.wakeStateLocked(), true
				ws.Progress = progressOnly
			}
			p.callWaiterLocked(w, ws)
		case !progressOnly || !w.newDataOnly:
			w.Wake()
		}
	}
}

// callWaiterLocked calls an after-unlock waiter with ws, drops it when it says so and
// collects (or starts) the function it returns. Callers hold mu.
func (p *Partition) callWaiterLocked(w *Waiter, ws WakeState) {
	drop, then := w.after(ws)
	if drop {
		delete(p.watchers, w) // allowed while ranging
	}
	switch {
	case then == nil:
	case p.collecting:
		p.collected = append(p.collected, then)
	default:
		go then()
	}
}

func (p *Partition) wakeStateLocked() WakeState {
	return WakeState{Role: p.role, HighWatermark: p.highWatermark, MaximalISRSize: p.maximalISRSizeLocked(),
		LogFailed: p.log.Failure() != nil, Changes: p.changes.Load(), LocalEnd: p.localEndLocked()}
}

// maximalISRSizeLocked is len(maximalISRLocked()) without its copy.
func (p *Partition) maximalISRSizeLocked() int {
	n := len(p.isr)
	for _, r := range p.pendingISR {
		if !slices.Contains(p.isr, r) {
			n++
		}
	}
	return n
}
