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
	if err := p.BecomeLeaderOf(1, 0, []int32{0, 1}, []int32{0, 1}); err != nil {
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
	p.updateFollowerLocked(1, 4, -1, -1, time.Now(), nil)
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

// A parked follower fetch's waiter is woken by new data and by role changes, never by a
// high watermark move alone (another follower's fetch, the leader's fsync); every other
// waiter is woken by both. Changes counts every wake-up, as of the read that returns it.
func TestFollowerFetchWaiterWakesOnNewDataOnly(t *testing.T) {
	p, _ := newPartition(t, true)
	if err := p.BecomeLeaderOf(1, 0, []int32{0, 1, 2}, []int32{0, 1, 2}); err != nil {
		t.Fatal(err)
	}
	// The parked follower fetch's waiter as delayed_fetch.go makes it; every wake-up of
	// this test happens on its own goroutine, under the partition lock.
	fetchWakes := 0
	fw := NewAfterUnlockWaiter(true, func(WakeState) (bool, func()) { fetchWakes++; return false, nil })
	w := NewWaiter()
	p.Watch(fw)
	p.Watch(w)
	defer p.Unwatch(fw)
	defer p.Unwatch(w)
	seenFetchWakes := fetchWakes
	woken := func(w *Waiter) bool {
		if w == fw {
			was := seenFetchWakes
			seenFetchWakes = fetchWakes
			return fetchWakes != was
		}
		select {
		case <-w.C:
			return true
		default:
			return false
		}
	}
	fetch := func(id int32, offset int64) FetchResult {
		t.Helper()
		res, _, err := followerRead(p, FollowerFetch{ReplicaID: id, FetchOffset: offset, CurrentLeaderEpoch: 1, LastFetchedEpoch: -1, MaxBytes: 1 << 20, LogStartOffset: 0}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	fetch(1, 0)
	fetch(2, 0)
	woken(fw)
	woken(w)
	before := p.Changes()
	if _, err := p.AppendAsLeader(batch(3), 0); err != nil {
		t.Fatal(err)
	}
	if !woken(fw) || !woken(w) {
		t.Fatal("an append did not wake both waiters")
	}
	if p.Changes() == before {
		t.Fatal("an append did not count as a change")
	}
	fetch(1, 3)
	res := fetch(2, 3) // the HW moves to 3
	if hw := p.State().HighWatermark; hw != 3 {
		t.Fatalf("HW %d", hw)
	}
	if woken(fw) {
		t.Fatal("a high watermark move woke a parked follower fetch")
	}
	if !woken(w) {
		t.Fatal("a high watermark move did not wake the other waiter")
	}
	if res.Changes != p.Changes() {
		t.Fatalf("the read that moved the HW returned changes %d, the partition is at %d", res.Changes, p.Changes())
	}
	if err := p.BecomeFollower(2, 1); err != nil {
		t.Fatal(err)
	}
	if !woken(fw) || !woken(w) {
		t.Fatal("a role change did not wake both waiters")
	}
}

// An after-unlock waiter's decision is called from Watch with the current state and
// then, on the goroutine that changes the partition, at each wake-up (a high watermark
// advance by a follower fetch, a role change) until it asks to be dropped.
func TestAfterUnlockWaiterDecides(t *testing.T) {
	p, _ := newPartition(t, true)
	if err := p.BecomeLeaderOf(1, 0, []int32{0, 1}, []int32{0, 1}); err != nil {
		t.Fatal(err)
	}
	var seen []WakeState
	drop := false
	w := NewAfterUnlockWaiter(false, func(s WakeState) (bool, func()) { seen = append(seen, s); return drop, nil })
	p.Watch(w)
	if len(seen) != 1 || seen[0].Role != Leader || seen[0].HighWatermark != 0 || seen[0].MaximalISRSize != 2 {
		t.Fatalf("from Watch: %+v", seen)
	}
	if _, err := p.AppendAsLeader(batch(4), 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := followerRead(p, FollowerFetch{ReplicaID: 1, FetchOffset: 4, CurrentLeaderEpoch: 1, LastFetchedEpoch: -1, MaxBytes: 1 << 20, LogStartOffset: 0}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if last := seen[len(seen)-1]; last.HighWatermark != 4 {
		t.Fatalf("after the follower fetch: %+v", seen)
	}
	drop = true
	if err := p.BecomeFollower(2, 1); err != nil {
		t.Fatal(err)
	}
	n := len(seen)
	if seen[n-1].Role != Follower {
		t.Fatalf("after the role change: %+v", seen[n-1])
	}
	if err := p.BecomeLeaderOf(3, 0, []int32{0, 1}, []int32{0, 1}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != n {
		t.Fatalf("called after asking to be dropped: %+v", seen[n:])
	}
}

// An after-unlock waiter's function runs with the partition lock released (it takes
// the lock itself here): on the appending goroutine, before the append returns, for
// the produce handler's append; on the reading goroutine, before ReadForFollowerHeld
// returns, for the follower fetch that advances the high watermark; on a goroutine of
// its own for other wake-ups (a role change). A follower-fetch waiter is not run for
// the high watermark move.
func TestAfterUnlockWaiterRunsOnTheChangingGoroutine(t *testing.T) {
	p, _ := newPartition(t, true)
	if err := p.BecomeLeaderOf(1, 0, []int32{0, 1}, []int32{0, 1}); err != nil {
		t.Fatal(err)
	}
	type run struct {
		hw      int64
		watched bool
	}
	runs := make(chan run, 16)
	fetchRuns := make(chan struct{}, 16)
	w := NewAfterUnlockWaiter(false, func(s WakeState) (bool, func()) {
		watched := s.Watching
		return false, func() { runs <- run{p.State().HighWatermark, watched} }
	})
	fw := NewAfterUnlockWaiter(true, func(s WakeState) (bool, func()) {
		if s.Watching {
			return false, nil
		}
		return false, func() { _ = p.State(); fetchRuns <- struct{}{} }
	})
	p.Watch(w)
	p.Watch(fw)
	if r := <-runs; !r.watched {
		t.Fatal("Watch did not run the function with Watching set")
	}
	if _, err := p.AppendValidatedAsLeader(batch(2), 0); err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || len(fetchRuns) != 1 {
		t.Fatalf("after the produce append: %d and %d runs before it returned, want 1 each", len(runs), len(fetchRuns))
	}
	<-runs
	<-fetchRuns
	if _, _, err := followerRead(p, FollowerFetch{ReplicaID: 1, FetchOffset: 2, CurrentLeaderEpoch: 1, LastFetchedEpoch: -1,
		MaxBytes: 1 << 20, LogStartOffset: -1}, time.Now()); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-runs:
		if r.hw != 2 {
			t.Fatalf("ran at high watermark %d, want 2", r.hw)
		}
	default:
		t.Fatal("the high watermark advance returned without running the function")
	}
	if len(fetchRuns) != 0 {
		t.Fatal("a follower-fetch waiter ran for a high watermark move")
	}
	if err := p.BecomeFollower(2, 1); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case <-runs:
		case <-fetchRuns:
		case <-time.After(10 * time.Second):
			t.Fatal("a role change did not run the functions")
		}
	}
	p.Unwatch(w)
	p.Unwatch(fw)
}
