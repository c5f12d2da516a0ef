package replication

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/petrel-broker/petrel/segment"
)

// A follower whose fsync fails holds data not known to be on disk: its log is failed
// for good (further appends refused), and it stops fetching, so its next fetch never
// reports an end offset the leader would count towards the high watermark.
func TestFollowerFsyncFailureFailsTheLog(t *testing.T) {
	p := newFollowers(t, 1)[0]
	testHookFsyncError = func(*Partition) error { return syscall.EIO }
	t.Cleanup(func() { testHookFsyncError = nil })
	if err := p.AppendAsFollower(batch(3), 3, 0, 0); !errors.Is(err, syscall.EIO) {
		t.Fatalf("append with a failing fsync: %v, want EIO", err)
	}
	testHookFsyncError = nil
	if err := p.WithLog(func(l *segment.Log) error { return l.Failure() }); !errors.Is(err, segment.ErrLogFailed) {
		t.Fatalf("log failure after the failed fsync: %v, want ErrLogFailed", err)
	}
	if pos, ok := p.FollowerPosition(); ok {
		t.Fatalf("a failed follower still fetches from %d", pos.LogEndOffset)
	}
	if err := p.AppendAsFollower(batch(1), 3, 0, 0); !errors.Is(err, segment.ErrLogFailed) {
		t.Fatalf("append after the failure: %v, want ErrLogFailed", err)
	}
}

// A failed fsync overtaken by a truncation is still a failure: the pages it did not
// write may hold records below the truncation point, and Linux reports a writeback
// error once, so the retry's fsync would succeed over lost data. The log is failed for
// good and the append that waited for the fsync gets the error.
func TestFsyncFailureOvertakenByTruncationStaysFailed(t *testing.T) {
	p, _ := newPartition(t, true)
	if err := p.BecomeLeaderOf(1, 0, []int32{0}, []int32{0}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(batch(2), 0); err != nil {
		t.Fatal(err)
	}
	once := false
	testHookAfterFsync = func(q *Partition) {
		if q != p || once {
			return
		}
		once = true
		if err := p.BecomeFollower(2, 1); err != nil {
			t.Error(err)
		}
		if _, err := p.TruncateTo(3); err != nil {
			t.Error(err)
		}
	}
	failed := false
	testHookFsyncError = func(q *Partition) error {
		if q != p || failed {
			return nil
		}
		failed = true
		return syscall.EIO
	}
	t.Cleanup(func() { testHookAfterFsync, testHookFsyncError = nil, nil })
	if _, err := p.AppendAsLeader(batch(3), 0); !errors.Is(err, syscall.EIO) {
		t.Fatalf("append whose fsync failed: %v, want EIO", err)
	}
	if !once || !failed {
		t.Fatal("the hooks did not run")
	}
	if err := p.WithLog(func(l *segment.Log) error { return l.Failure() }); !errors.Is(err, segment.ErrLogFailed) {
		t.Fatalf("log failure after the failed fsync: %v, want ErrLogFailed", err)
	}
	p.mu.Lock()
	durable := p.durableEnd
	p.mu.Unlock()
	if durable > 2 {
		t.Fatalf("durable end %d after a failed fsync of offsets 2-4", durable)
	}
}

// A producer snapshot that cannot be written at a roll fails the roll, and the log for
// good (Kafka takes the log directory offline): the recovery point never moves past a
// segment whose producer state is not on disk, and no later append builds on it.
func TestFailedRollSnapshotFailsTheRoll(t *testing.T) {
	p, dir := newLeader(t, segment.DefaultConfig())
	if _, err := p.AppendAsLeader(batch(3), 1); err != nil {
		t.Fatal(err)
	}
	// The snapshot's temporary file cannot be created: a directory has its name.
	if err := os.Mkdir(ProducerSnapshotPath(dir, 3)+".tmp", 0o755); err != nil {
		t.Fatal(err)
	}
	err := p.WithLog(func(l *segment.Log) error { return l.Roll() })
	if !errors.Is(err, segment.ErrLogFailed) {
		t.Fatalf("roll with a failing producer snapshot: %v, want ErrLogFailed", err)
	}
	st := p.State()
	if st.RecoveryPoint >= 3 {
		t.Fatalf("recovery point %d moved past the segment whose snapshot failed", st.RecoveryPoint)
	}
	if _, err := p.AppendAsLeader(batch(1), 1); !errors.Is(err, segment.ErrLogFailed) {
		t.Fatalf("append after the failed roll: %v, want ErrLogFailed", err)
	}
}
