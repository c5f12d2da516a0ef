package controller

import (
	"sync"
	"time"

	"github.com/petrel-broker/petrel/metadata"
)

// A whole cluster started at once is routine even when a node comes up later than the
// others: a broker this controller has not heard from in its node's first term (no
// other leader seen since the node started) is fenced as any absent broker, but the
// fence is logged at INFO ("broker not started yet"), not as a failure. One that has
// still not registered notStartedWarnAfter later is a WARN, once: a node that does not
// come back is never hidden, as Raft's unreachable peers are not (broker/raft_logger.go
// waits as long).

// notStartedWarnAfter is how long a broker fenced as not started yet may take to
// register before a WARN says it has not (tests shorten it).
var notStartedWarnAfter = 30 * time.Second

// absentSinceStart reports whether broker id is one this controller has not heard from
// in its node's first term: a cluster starting, of which broker id is not up yet.
func (c *Controller) absentSinceStart(id int32) bool {
	return c.firstTerm.Load() && !c.sessions.heard(id)
}

// notStartedBrokers are the brokers fenced as not started yet, by broker id: the epoch
// they were fenced at and when. Safe for concurrent use; mu is a leaf.
type notStartedBrokers struct {
	mu sync.Mutex
	// fences by broker id; guarded by mu.
	fences map[int32]notStartedFence
}

type notStartedFence struct {
	epoch int64
	at    time.Time
}

// fenced records broker id fenced at epoch as not started yet.
func (n *notStartedBrokers) fenced(id int32, epoch int64, at time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fences == nil {
		n.fences = map[int32]notStartedFence{}
	}
	n.fences[id] = notStartedFence{epoch: epoch, at: at}
}

// due returns the brokers of im still fenced at the epoch they were fenced at
// notStartedWarnAfter ago or more, and forgets them and those that registered since.
func (n *notStartedBrokers) due(im *metadata.Image, now time.Time) []int32 {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []int32
	for id, f := range n.fences {
		br := im.Brokers[id]
		switch {
		case br == nil || !br.Fenced || br.Epoch != f.epoch:
			delete(n.fences, id) // registered again, or unregistered
		case now.Sub(f.at) >= notStartedWarnAfter:
			out = append(out, id)
			delete(n.fences, id)
		}
	}
	return out
}

// warnNotStarted is a controller duty: a WARN for each broker fenced as not started yet
// that has not registered notStartedWarnAfter later.
func (c *Controller) warnNotStarted(im *metadata.Image, now time.Time) {
	for _, id := range c.notStarted.due(im, now) {
		c.log.Warn("broker has not started: fenced as not started yet and not registered since; partitions whose ISR only it holds have no leader until it does",
			"broker", id, "waited", notStartedWarnAfter.String())
	}
}
