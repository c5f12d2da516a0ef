package broker

import (
	"sync/atomic"
	"time"
)

// raftCommitTimeout is hashicorp/raft's CommitTimeout: at idle the leader sends each
// follower an AppendEntries this often (5–10 ms at 5 ms: most of an idle cluster's
// fixed CPU), so that followers learn the commit index when no entry follows. Its
// default, 50 ms, would make every metadata change reach the other brokers up to
// 100 ms late, were it not for commitNudge: after each controller write the leader
// appends a no-op (a Raft barrier), which goes to the followers at once carrying the
// write's commit.
var raftCommitTimeout = 50 * time.Millisecond

// commitNudge sends the commit index of the controller's writes to the followers at
// once: after a write, one barrier at a time, again while writes came meanwhile. The
// zero value is ready.
type commitNudge struct {
	running atomic.Bool
	pending atomic.Bool
}

// nudge follows a controller write committed on this node (the Raft leader).
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
