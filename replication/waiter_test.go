package replication

import (
	"testing"
	"time"
)

// LeaderHighWatermark, read without the lock by acks=all waiters, follows the high
// watermark while the replica leads and is -1 otherwise, and is current whenever a
// waiter is woken.
func TestLeaderHighWatermarkMirror(t *testing.T) {
	p, _ := newPartition(t, true)
	if hw := p.LeaderHighWatermark(); hw != -1 {
		t.Fatalf("follower: %d", hw)
	}
	if err := p.BecomeLeader(1, []int32{0, 1}); err != nil {
		t.Fatal(err)
	}
	if hw := p.LeaderHighWatermark(); hw != 0 {
		t.Fatalf("new leader: %d", hw)
	}
	w := NewWaiter()
	p.Watch(w)
	defer p.Unwatch(w)
	if _, err := p.AppendAsLeader(batch(4), 0); err != nil {
		t.Fatal(err)
	}
	if hw := p.LeaderHighWatermark(); hw != 0 {
		t.Fatalf("before the follower has the data: %d", hw)
	}
	for len(w.C) > 0 {
		<-w.C
	}
	p.mu.Lock()
	p.updateFollowerLocked(1, 4, -1, time.Now())
	p.mu.Unlock()
	select {
	case <-w.C:
	default:
		t.Fatal("the HW moved and woke nobody")
	}
	if hw, st := p.LeaderHighWatermark(), p.State(); hw != 4 || st.HighWatermark != 4 {
		t.Fatalf("after the follower fetch: mirror %d, HW %d", hw, st.HighWatermark)
	}
	if err := p.BecomeFollower(2, 1); err != nil {
		t.Fatal(err)
	}
	if hw := p.LeaderHighWatermark(); hw != -1 {
		t.Fatalf("after losing leadership: %d", hw)
	}
}
