package replication

import (
	"errors"
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
