package replication

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/segment"
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
	answeredOnlyAfterACoveringFsync(t, p, func() (segment.AppendInfo, error) { return p.AppendForAcksOne(batch(2), false, nil, nil) },
		func(pg *Purgatory, end int64, done func([]Outcome)) {
			pg.WaitFsynced(context.Background(), []AcksAllWrite{{Partition: p, End: end}}, time.Minute, done)
		})
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
	info, err := p.AppendForAcksOne(batch(3), false, nil, nil)
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
