package replication

import (
	"encoding/binary"
	"testing"

	"github.com/petrel-broker/petrel/segment"
)

// followerBatch is batch(n) at base offset base in leader epoch epoch, as a follower
// receives it (CRC unchecked by the follower's append).
func followerBatch(n int, base int64, epoch int32) []byte {
	b := batch(n)
	binary.BigEndian.PutUint64(b[0:], uint64(base))
	binary.BigEndian.PutUint32(b[12:], uint32(epoch))
	return b
}

// TestFollowerPositionVersionMovesWithTheLog: the follower fetcher reads a partition's
// position again only when its positionVersion moved (fetcher.go), so every change of
// what FollowerPosition returns moves it: a new leader epoch, an append, a truncation,
// a log start move from the leader, and the replica no longer following.
func TestFollowerPositionVersionMovesWithTheLog(t *testing.T) {
	log, _, err := segment.Open(t.TempDir(), segment.DefaultConfig(), segment.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := NewPartition("f", 0, log, 0, Options{BrokerID: 1})
	t.Cleanup(func() { p.Stop(false) })
	last := p.positionVersion.Load()
	lastPos, _ := p.FollowerPosition()
	step := func(what string, change func() error, moved func(before, after FollowerPosition, ok bool) bool) {
		t.Helper()
		if err := change(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		pos, ok := p.FollowerPosition()
		v := p.positionVersion.Load()
		if v == last {
			t.Fatalf("%s: position version stayed at %d", what, v)
		}
		if !moved(lastPos, pos, ok) {
			t.Fatalf("%s: position %+v -> %+v (following %v)", what, lastPos, pos, ok)
		}
		last, lastPos = v, pos
	}
	step("follow in epoch 1", func() error { return p.BecomeFollower(1, 0) },
		func(_, a FollowerPosition, ok bool) bool { return ok && a.LeaderEpoch == 1 && a.Leader == 0 })
	step("append", func() error { return p.AppendAsFollower(followerBatch(3, 0, 1), 1, 0, 0) },
		func(b, a FollowerPosition, ok bool) bool { return ok && a.LogEndOffset == 3 && a.LastFetchedEpoch == 1 })
	step("append more", func() error { return p.AppendAsFollower(followerBatch(2, 3, 1), 1, 3, 0) },
		func(b, a FollowerPosition, ok bool) bool { return ok && a.LogEndOffset == 5 })
	step("truncate", func() error { _, err := p.TruncateTo(3); return err },
		func(b, a FollowerPosition, ok bool) bool { return ok && a.LogEndOffset == 3 })
	step("log start from the leader", func() error { return p.AppendAsFollower(nil, 1, 3, 3) },
		func(b, a FollowerPosition, ok bool) bool { return ok && a.LogStartOffset == 3 })
	step("new leader epoch", func() error { return p.BecomeFollower(2, 2) },
		func(b, a FollowerPosition, ok bool) bool { return ok && a.LeaderEpoch == 2 && a.Leader == 2 })
	step("truncate fully", func() error { return p.TruncateFullyAndStartAt(10) },
		func(b, a FollowerPosition, ok bool) bool { return ok && a.LogEndOffset == 10 && a.LogStartOffset == 10 })
	step("leading", func() error { return p.BecomeLeaderOf(3, 1, []int32{1}, []int32{1}) },
		func(b, a FollowerPosition, ok bool) bool { return !ok })
}
