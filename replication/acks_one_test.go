package replication

import (
	"context"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// An acks=1 append with flush.messages=1 returns once written, before its fsync, and its
// answer (WaitFsynced) waits for an fsync of the leader's own log that covers it, not
// for the followers: the leader of three replicas, whose high watermark never moves
// here, answers every append once the second fsync ends, and the appends made while
// the first fsync ran (several connections at once) share that second fsync.
func TestAcksOneAppendsAreAnsweredOnlyAfterAnFsyncCoveringThem(t *testing.T) {
	p, _ := newPartition(t, true)
	if err := p.BecomeLeaderOf(1, 0, []int32{0, 1, 2}, []int32{0, 1, 2}); err != nil {
		t.Fatal(err)
	}
	var fsyncs atomic.Int32
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	testHookAfterFsync = func(q *Partition) {
		if q == p && fsyncs.Add(1) == 1 {
			entered <- struct{}{}
			<-release // the first fsync stays in flight until the others are appended
		}
	}
	var releaseOnce sync.Once
	open := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(func() { open(); testHookAfterFsync = nil })
	pg := NewPurgatory(context.Background())
	type acked struct {
		end, recoveryPoint int64
		outcome            Outcome
	}
	answers := make(chan acked, 16)
	appendAndWait := func() {
		info, err := p.AppendForAcksOne(batch(2), false, nil)
		if err != nil {
			t.Error(err)
			return
		}
		end := info.LastOffset + 1
		pg.WaitFsynced(context.Background(), []AcksAllWrite{{Partition: p, End: end}}, time.Minute, func(o []Outcome) {
			answers <- acked{end, p.State().RecoveryPoint, o[0]}
		})
	}
	returned := make(chan struct{})
	go func() { appendAndWait(); close(returned) }()
	select {
	case <-returned:
	case <-time.After(30 * time.Second):
		t.Fatal("the acks=1 append waited for its fsync")
	}
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("no fsync started behind the acks=1 append")
	}
	const concurrent = 8
	var wg sync.WaitGroup
	for range concurrent {
		wg.Add(1)
		go func() { defer wg.Done(); appendAndWait() }()
	}
	wg.Wait() // every append returned while the first fsync is in flight
	if st := p.State(); st.LogEndOffset != 2*(concurrent+1) || len(answers) != 0 {
		t.Fatalf("with the first fsync in flight: log end %d, %d answered; want %d, 0", st.LogEndOffset, len(answers), 2*(concurrent+1))
	}
	open()
	for range concurrent + 1 {
		select {
		case a := <-answers:
			if a.outcome != OutcomeCommitted || a.recoveryPoint < a.end {
				t.Errorf("records below %d answered %v with the log fsynced below %d", a.end, a.outcome, a.recoveryPoint)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("an acks=1 append was never answered")
		}
	}
	if n := fsyncs.Load(); n != 2 {
		t.Fatalf("%d fsyncs for 1 append and %d appended during its fsync, want 2", n, concurrent)
	}
	if hw := p.State().HighWatermark; hw != 0 {
		t.Fatalf("high watermark %d with no follower fetch", hw)
	}
}

// A failed fsync behind an acks=1 append answers it with a storage error at once.
func TestFailedFsyncBehindAcksOneIsAStorageError(t *testing.T) {
	p := newSyncedLeader(t)
	testHookFsyncError = func(q *Partition) error {
		if q != p {
			return nil
		}
		return syscall.EIO
	}
	t.Cleanup(func() { testHookFsyncError = nil })
	info, err := p.AppendForAcksOne(batch(3), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	answer := make(chan Outcome, 2)
	NewPurgatory(context.Background()).WaitFsynced(context.Background(), []AcksAllWrite{{Partition: p, End: info.LastOffset + 1}}, time.Hour,
		func(o []Outcome) { answer <- o[0] })
	select {
	case o := <-answer:
		if o != OutcomeStorageError {
			t.Fatalf("the acks=1 append whose fsync failed was answered %v, want %v", o, OutcomeStorageError)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the acks=1 append whose fsync failed was not answered")
	}
}

// The acks=1 rule reads the leader's own fsynced end, never the high watermark.
func TestAcksOneRuleFollowsTheLocalEnd(t *testing.T) {
	for _, c := range []struct {
		ws   WakeState
		want Outcome
	}{
		{WakeState{Role: Leader, LocalEnd: 4}, OutcomeWaiting},
		{WakeState{Role: Leader, LocalEnd: 5, HighWatermark: 0}, OutcomeCommitted},
		{WakeState{Role: Follower, LocalEnd: 4}, OutcomeNotLeader},
		{WakeState{Role: Leader, LocalEnd: 4, LogFailed: true}, OutcomeStorageError},
		{WakeState{Role: Leader, LocalEnd: 5, LogFailed: true}, OutcomeCommitted},
	} {
		if got := AcksOneOutcome(c.ws, 5); got != c.want {
			t.Errorf("AcksOneOutcome(%+v, 5) = %v, want %v", c.ws, got, c.want)
		}
	}
}
