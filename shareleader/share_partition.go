package shareleader

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/petrel-broker/petrel/share"
)

// sharePartition is one share partition on its leader: the share.Partition, the
// queue of its changes on their way to the share coordinator and its lock timer.
type sharePartition struct {
	m           *Manager
	key         share.Key
	replica     Replica
	leaderEpoch int32 // the replica's leader epoch at load; writes carry it

	// loaded is closed when load ends; loadErr (set before) is its failure.
	loaded  chan struct{}
	loadErr error

	mu sync.Mutex
	// p is the state machine; guarded by mu. nil until loaded.
	p *share.Partition
	// stateEpoch is the durable state's epoch (ReadShareGroupState); guarded by mu.
	stateEpoch int32
	// cfg is the group's settings read at load; guarded by mu.
	cfg GroupConfig
	// queue holds the changes not yet written, in the order they were made; the
	// first is being written when writing is set. Guarded by mu.
	queue   []*pendingWrite
	writing bool
	// timer fires at timerAt, the earliest lock deadline; guarded by mu.
	timer   *time.Timer
	timerAt int64
	// dropped: the share partition is no longer in use (leadership lost, a failed
	// write, idle, the manager closed); guarded by mu.
	dropped bool
	// usedAt is when the share partition was last used (ms); guarded by mu.
	usedAt int64
}

// pendingWrite is one change waiting for WriteShareGroupState; done is closed once
// it is written (err nil) or failed.
type pendingWrite struct {
	change share.Change
	done   chan struct{}
	err    error
}

func newSharePartition(m *Manager, key share.Key, replica Replica, leaderEpoch int32) *sharePartition {
	return &sharePartition{m: m, key: key, replica: replica, leaderEpoch: leaderEpoch, loaded: make(chan struct{})}
}

// load reads the durable state and builds the share partition (Kafka's
// SharePartition.maybeInitialize): a state never initialized (start offset -1) starts
// where share.auto.offset.reset says; otherwise share.Load, whose change (records
// past the delivery limit archived) is written before the partition is used.
func (sp *sharePartition) load(ctx context.Context) {
	defer close(sp.loaded)
	cfg := sp.m.cfg.GroupConfig(sp.key.GroupID)
	st, err := sp.readState(ctx)
	if err != nil {
		sp.loadErr = err
		return
	}
	var p *share.Partition
	var change share.Change
	if st.StartOffset < 0 {
		start, err := resolveStartOffset(sp.replica, cfg.AutoOffsetReset, sp.m.cfg.Now())
		if err != nil {
			sp.loadErr = err
			return
		}
		p = share.NewPartition(sp.key, cfg.Partition, start, sp.leaderEpoch)
		// The resolved start is durable before any record is acquired, so that a new
		// leader does not resolve "latest" again past records handed out here.
		change = share.Change{StartOffset: start}
	} else {
		p, change = share.Load(sp.key, cfg.Partition, st, sp.leaderEpoch)
	}
	sp.mu.Lock()
	sp.p, sp.stateEpoch, sp.cfg, sp.usedAt = p, st.StateEpoch, cfg, sp.m.nowMs()
	sp.mu.Unlock()
	if change.Empty() && st.StartOffset >= 0 {
		return
	}
	if err := sp.writeState(ctx, change); err != nil {
		sp.loadErr = err
	}
}

// readState is ReadShareGroupState for this partition, as a share.State.
func (sp *sharePartition) readState(ctx context.Context) (share.State, error) {
	resp, err := sp.m.cfg.Persister().ReadState(ctx, readStateRequest(sp.key, sp.leaderEpoch))
	if err != nil {
		return share.State{}, fmt.Errorf("%w: reading %s: %w", ErrStateWrite, sp, err)
	}
	return stateOfRead(sp.key, resp)
}

// writeState writes one change at once (the load's, before anyone uses the partition).
func (sp *sharePartition) writeState(ctx context.Context, c share.Change) error {
	sp.mu.Lock()
	req := writeStateRequest(sp.key, sp.stateEpoch, sp.leaderEpoch, c)
	sp.mu.Unlock()
	resp, err := sp.m.cfg.Persister().WriteState(ctx, req)
	if err != nil {
		return fmt.Errorf("%w: writing %s: %w", ErrStateWrite, sp, err)
	}
	return writeOutcome(sp.key, resp)
}

func (sp *sharePartition) String() string {
	return fmt.Sprintf("share partition %s/%x/%d", sp.key.GroupID, sp.key.TopicID, sp.key.Partition)
}

// enqueueLocked queues c for writing (nil for an empty change) and re-arms the lock
// timer. The caller holds sp.mu, then calls flush without it.
func (sp *sharePartition) enqueueLocked(c share.Change) *pendingWrite {
	sp.armLocked()
	if c.Empty() {
		return nil
	}
	w := &pendingWrite{change: c, done: make(chan struct{})}
	sp.queue = append(sp.queue, w)
	return w
}

// flush writes the queued changes in order unless another goroutine is writing them,
// then waits for w (nil: nothing to wait for) or ctx. One WriteShareGroupState per
// change, never two at once: the share coordinator lays each over the previous.
// No lock is held across the write. A failed write fails every change queued after it
// and drops the share partition: the next fetch reloads the durable state.
func (sp *sharePartition) flush(ctx context.Context, w *pendingWrite) error {
	sp.mu.Lock()
	if sp.dropped {
		// A dropped share partition starts no write: its epochs are those of the
		// reload that follows, so a late write would land over the reloaded state.
		sp.failQueueLocked(fmt.Errorf("%w: %s was dropped", ErrNotLeader, sp))
	} else if !sp.writing && len(sp.queue) > 0 {
		sp.writing = true
		if !sp.m.goTracked(sp.writeQueue) {
			sp.writing = false
			sp.failQueueLocked(fmt.Errorf("%w: writing %s", ErrClosed, sp))
		}
	}
	sp.mu.Unlock()
	if w == nil {
		return nil
	}
	select {
	case <-w.done:
		return w.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writeQueue drains the queue, one write at a time, with the manager's context (a
// write goes on when the request that made it gives up: the change is made).
func (sp *sharePartition) writeQueue() {
	for {
		sp.mu.Lock()
		if sp.dropped {
			sp.failQueueLocked(fmt.Errorf("%w: %s was dropped", ErrNotLeader, sp))
		}
		if len(sp.queue) == 0 {
			sp.writing = false
			sp.mu.Unlock()
			return
		}
		w := sp.queue[0]
		req := writeStateRequest(sp.key, sp.stateEpoch, sp.leaderEpoch, w.change)
		sp.mu.Unlock()

		ctx, cancel := context.WithTimeout(sp.m.ctx, sp.m.cfg.WriteTimeout)
		resp, err := sp.m.cfg.Persister().WriteState(ctx, req)
		cancel()
		if err != nil {
			err = fmt.Errorf("%w: writing %s: %w", ErrStateWrite, sp, err)
		} else {
			err = writeOutcome(sp.key, resp)
		}

		sp.mu.Lock()
		if err != nil {
			// Dropped before the lock is released: no change may be made (and
			// written) between the failure and the reload, whose epochs it would carry.
			sp.dropLocked()
			sp.failQueueLocked(err)
			sp.writing = false
			sp.mu.Unlock()
			sp.m.log.Log(stateLogLevel(err), "share state write failed; dropping the share partition", "partition", sp.String(), "error", err)
			sp.m.forget(sp)
			return
		}
		sp.queue = sp.queue[1:]
		sp.mu.Unlock()
		close(w.done)
	}
}

// armLocked sets the lock timer to the earliest acquisition-lock deadline.
func (sp *sharePartition) armLocked() {
	if sp.dropped || sp.p == nil {
		return
	}
	at, ok := sp.p.NextDeadline()
	if !ok {
		if sp.timer != nil {
			sp.timer.Stop()
			sp.timer, sp.timerAt = nil, 0
		}
		return
	}
	if sp.timer != nil && sp.timerAt == at {
		return
	}
	if sp.timer != nil {
		sp.timer.Stop()
	}
	d := time.Duration(at-sp.m.nowMs()) * time.Millisecond
	sp.timerAt = at
	sp.timer = time.AfterFunc(max(d, 0), func() { sp.m.runTracked(sp.expire) })
}

// expire is the lock timer: the locks due end (Available again, or Archived at the
// delivery limit), the change is written, and parked fetches try again.
func (sp *sharePartition) expire() {
	sp.mu.Lock()
	if sp.dropped || sp.p == nil {
		sp.mu.Unlock()
		return
	}
	sp.timer, sp.timerAt = nil, 0
	now := sp.m.nowMs()
	sp.m.metrics.expiring(sp.key.GroupID, sp.p.InFlight(), now, sp.cfg.Partition)
	c := sp.p.Expire(now)
	w := sp.enqueueLocked(c)
	sp.mu.Unlock()
	if w != nil {
		_ = sp.flush(sp.m.ctx, nil)
		sp.m.notifyAvailable()
	}
}

// failQueueLocked fails every queued change with err; the caller holds sp.mu.
func (sp *sharePartition) failQueueLocked(err error) {
	for _, f := range sp.queue {
		f.err = err
		close(f.done)
	}
	sp.queue = nil
}

// drop stops the share partition: no timer, no more writes started by it.
func (sp *sharePartition) drop() {
	sp.mu.Lock()
	sp.dropLocked()
	sp.mu.Unlock()
}

// dropLocked is drop with sp.mu held.
func (sp *sharePartition) dropLocked() {
	sp.dropped = true
	if sp.timer != nil {
		sp.timer.Stop()
		sp.timer, sp.timerAt = nil, 0
	}
}

// use runs fn on the loaded share partition under its lock; ErrNotLeader once dropped.
func (sp *sharePartition) use(fn func(p *share.Partition) *pendingWrite) (*pendingWrite, error) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.dropped || sp.p == nil {
		return nil, fmt.Errorf("%w: %s was dropped", ErrNotLeader, sp)
	}
	sp.usedAt = sp.m.nowMs()
	return fn(sp.p), nil
}

// dropIfIdle drops the share partition when it was loaded and unused since before
// cutoff (ms) with nothing in flight: no acquisition lock, no write queued or running.
func (sp *sharePartition) dropIfIdle(cutoff int64) bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.dropped || sp.p == nil || sp.usedAt >= cutoff || sp.writing || len(sp.queue) > 0 {
		return false
	}
	if _, locked := sp.p.NextDeadline(); locked {
		return false
	}
	sp.dropLocked()
	return true
}
