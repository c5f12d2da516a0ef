package replication

import (
	"context"
	"sync"
	"time"
)

// leaderKick answers the followers' parked fetches at once when this broker becomes
// the leader of a partition (Purgatory.LeadershipGained). A follower's fetch names only
// the partitions it followed when it sent it; one parked at a leader that meanwhile got
// new partitions (a topic created, leaders moved by a failover) would hold the follower
// away from them for up to replica.fetch.wait.max.ms, and an acks=all produce to them
// waits that long for the in-sync replicas. Answered now, the follower's next fetch
// names them. Kicks are at most one per leaderKickGap, so creating many partitions
// costs a few kicks, not one each. Safe for concurrent use.
type leaderKick struct {
	mu     sync.Mutex
	ctx    context.Context // done at the next kick; guarded by mu
	cancel context.CancelFunc
	last   time.Time // the last kick; guarded by mu
	late   bool      // a kick is scheduled after the gap; guarded by mu
}

// leaderKickGap is the shortest time between two kicks.
const leaderKickGap = 5 * time.Millisecond

func newLeaderKick() *leaderKick {
	k := &leaderKick{}
	k.ctx, k.cancel = context.WithCancel(context.Background())
	return k
}

// current is the context the next kick ends: a parked fetch answers when it does.
func (k *leaderKick) current() context.Context {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.ctx
}

// kick answers every follower fetch parked now (and, within leaderKickGap, those
// parked until the next kick after it).
func (k *leaderKick) kick() {
	k.mu.Lock()
	now := time.Now()
	if now.Sub(k.last) < leaderKickGap {
		if !k.late {
			k.late = true
			time.AfterFunc(leaderKickGap, k.kickLate)
		}
		k.mu.Unlock()
		return
	}
	k.last = now
	cancel := k.cancel
	k.ctx, k.cancel = context.WithCancel(context.Background())
	k.mu.Unlock()
	cancel()
}

// kickLate is a kick that came within the gap of the previous one, run after it.
func (k *leaderKick) kickLate() {
	k.mu.Lock()
	k.late = false
	k.last = time.Time{}
	k.mu.Unlock()
	k.kick()
}
