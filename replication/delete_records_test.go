package replication

import (
	"errors"
	"testing"
	"time"
)

// The low watermark is the smallest log start offset over the replica set as the
// followers report it in their fetches; a follower that has not reported makes it
// unknown (-1) unless it is not eligible (Kafka: a fenced broker's replica does not
// count); a follower's report of a moved log start wakes waiters.
func TestLowWatermarkFollowsTheFollowersLogStart(t *testing.T) {
	p, _ := newPartition(t, false)
	if err := p.BecomeLeaderOf(1, 0, []int32{0, 1, 2}, []int32{0, 1, 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(batch(10), 0); err != nil {
		t.Fatal(err)
	}
	fetch := func(id int32, offset, logStart int64) {
		t.Helper()
		f := FollowerFetch{ReplicaID: id, FetchOffset: offset, CurrentLeaderEpoch: 1, LastFetchedEpoch: -1, MaxBytes: 1 << 20, LogStartOffset: logStart}
		if _, _, err := followerRead(p, f, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	all := func(int32) bool { return true }
	if low, err := p.LowWatermark(all); err != nil || low != -1 {
		t.Fatalf("low watermark before any follower reported: %d, %v; want -1", low, err)
	}
	fetch(1, 10, 0)
	fetch(2, 10, 0)
	if low, _ := p.LowWatermark(all); low != 0 {
		t.Fatalf("low watermark with every log start at 0: %d", low)
	}
	required, err := p.DeleteRecordsBefore(-1) // the high watermark, 10
	if err != nil || required != 10 || p.State().LogStartOffset != 10 {
		t.Fatalf("DeleteRecordsBefore(-1): %d, %v, log start %d", required, err, p.State().LogStartOffset)
	}
	w := NewWaiter()
	p.Watch(w)
	defer p.Unwatch(w)
	select { // drain
	case <-w.C:
	default:
	}
	fetch(1, 10, 10)
	select {
	case <-w.C:
	default:
		t.Fatal("a follower's moved log start did not wake the waiter")
	}
	if low, _ := p.LowWatermark(all); low != 0 {
		t.Fatalf("low watermark with follower 2 still at 0: %d", low)
	}
	if low, _ := p.LowWatermark(func(id int32) bool { return id != 2 }); low != 10 {
		t.Fatalf("low watermark without the ineligible follower 2: %d", low)
	}
	fetch(2, 10, 10)
	if low, _ := p.LowWatermark(all); low != 10 {
		t.Fatalf("low watermark once every replica moved: %d", low)
	}
	if err := p.BecomeFollower(2, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := p.LowWatermark(all); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("LowWatermark off the leader: %v", err)
	}
}
