package replication

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/segment"
)

func newFollowers(t *testing.T, n int) []*Partition {
	t.Helper()
	parts := make([]*Partition, n)
	for i := range parts {
		log, _, err := segment.Open(t.TempDir(), segment.DefaultConfig(), segment.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p := NewPartition("t", int32(i), log, 0, Options{BrokerID: 1, SyncEveryAppend: true})
		t.Cleanup(func() { p.Stop(false) })
		if err := p.BecomeFollower(3, 0); err != nil {
			t.Fatal(err)
		}
		parts[i] = p
	}
	return parts
}

// The appends of one fetch answer are fsynced together: every partition's fsync is
// running at the same moment (the hook holds each one until all have started), and
// only once all are done do the high watermarks move and the data count as durable.
func TestFollowerAppendsOfOneFetchFsyncTogether(t *testing.T) {
	const n = 4
	parts := newFollowers(t, n)
	var (
		mu      sync.Mutex
		started int
		all     = make(chan struct{})
	)
	overlapped := true
	testHookAfterFsync = func(*Partition) {
		mu.Lock()
		started++
		if started == n {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
		case <-time.After(5 * time.Second):
			mu.Lock()
			overlapped = false
			mu.Unlock()
		}
	}
	t.Cleanup(func() { testHookAfterFsync = nil })
	fins := make([]followerFinish, n)
	for i, p := range parts {
		end, err := p.appendAsFollowerUnsynced(batch(3), 3)
		if err != nil || end != 3 {
			t.Fatalf("append: end %d, %v", end, err)
		}
		if st := p.State(); st.HighWatermark != 0 {
			t.Fatalf("HW %d before the fsync", st.HighWatermark)
		}
		fins[i] = followerFinish{p: p, end: end, leaderEpoch: 3, leaderHW: 2, leaderLogStart: 0}
	}
	for i, err := range finishFollowerAppends(fins) {
		if err != nil {
			t.Fatalf("partition %d: %v", i, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !overlapped || started != n {
		t.Fatalf("the %d fsyncs did not run together (%d started)", n, started)
	}
	for i, p := range parts {
		var recovery int64
		p.WithLog(func(l *segment.Log) error { recovery = l.RecoveryPoint(); return nil })
		if st := p.State(); st.HighWatermark != 2 || recovery != 3 {
			t.Fatalf("partition %d: HW %d, recovery point %d after the round", i, st.HighWatermark, recovery)
		}
	}
}

// A replica that stops following between its append and the end of the round keeps
// its state: the finish reports NOT_LEADER and applies no high watermark.
func TestFollowerFinishAfterLeadershipChange(t *testing.T) {
	parts := newFollowers(t, 2)
	var fins []followerFinish
	for _, p := range parts {
		end, err := p.appendAsFollowerUnsynced(batch(2), 3)
		if err != nil {
			t.Fatal(err)
		}
		fins = append(fins, followerFinish{p: p, end: end, leaderEpoch: 3, leaderHW: 2})
	}
	if err := parts[1].BecomeLeaderOf(4, 0, []int32{1}, []int32{1}); err != nil {
		t.Fatal(err)
	}
	errs := finishFollowerAppends(fins)
	if errs[0] != nil || !errors.Is(errs[1], ErrNotLeader) {
		t.Fatalf("errors %v", errs)
	}
	if st := parts[0].State(); st.HighWatermark != 2 {
		t.Fatalf("follower HW %d", st.HighWatermark)
	}
}
