package broker

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// raftCommitTimeout is hashicorp/raft's CommitTimeout: with no new entry the leader
// sends each follower an AppendEntries every 1-2 times this, and that is how a follower
// learns the commit index of the last entry it holds. At 5 ms those idle rounds were
// most of an idle cluster's fixed CPU; at hashicorp's default, 50 ms, each metadata
// change would reach the other brokers up to 100 ms late, were it not for commitNudge:
// after each controller write the leader appends a barrier, which goes to the
// followers at once carrying the write's commit. The barrier itself is then committed
// on a follower only at the next round, and readers do not wait for it
// (metadataStore.readable). A variable only so that a test can make it an hour.
var raftCommitTimeout = 50 * time.Millisecond

// commitNudge sends the commit index of the controller's writes to the followers at
// once: after a write, one barrier at a time, again while writes came meanwhile. The
// zero value is ready.
type commitNudge struct {
	running atomic.Bool
	pending atomic.Bool
}

// nudgeCommit follows a controller write committed on this node (the Raft leader). It
// does not wait: the barrier runs on a goroutine of its own, and nothing waits for the
// barrier's own commit.
func (n *raftNode) nudgeCommit() {
	c := &n.nudge
	c.pending.Store(true)
	if !c.running.CompareAndSwap(false, true) {
		return // the running loop sends another barrier
	}
	go func() {
		for {
			for c.pending.Swap(false) {
				if n.raft.Barrier(n.resignTimeout).Error() != nil {
					c.pending.Store(false) // not the leader any more, or stopping
				}
			}
			c.running.Store(false)
			// A write between the last Swap and Store: take the loop back, unless
			// another nudge has.
			if !c.pending.Load() || !c.running.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}

// readableIndex tracks the index of the last entry of the Raft log that changes what
// readers see: every entry but the barriers of commitNudge and the no-op a new leader
// writes, which never reach the state machine. A follower holds a barrier uncommitted
// until the leader's next round (raftCommitTimeout); metadataBehind compares the applied
// index with this one, so that a barrier at the end of the log does not hold Metadata
// and Produce requests. Safe for concurrent use.
type readableIndex struct {
	mu    sync.Mutex
	index uint64
}

// stored follows an append of logs.
func (r *readableIndex) stored(logs []*raft.Log) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range logs {
		if l.Type != raft.LogBarrier && l.Type != raft.LogNoop {
			r.index = max(r.index, l.Index)
		}
	}
}

// deleted follows the deletion of the entries lo to hi. When the tracked entry is among
// them, the index falls to lo-1: above the true one after a truncation of the log's
// tail (a conflict: the entries left may end in barriers, and readers then wait as for
// any entry), at or below the applied index after a compaction (which deletes only
// applied entries).
func (r *readableIndex) deleted(lo, hi uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.index >= lo && r.index <= hi {
		r.index = lo - 1
	}
}

// get returns the tracked index.
func (r *readableIndex) get() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.index
}
