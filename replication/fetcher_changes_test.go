package replication

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
)

// inLeaderSession waits until the fake leader's session holds partition id (want
// true) or not (want false).
func inLeaderSession(t *testing.T, l *fakeLeader, id int32, want bool) {
	t.Helper()
	testwait.For(t, 10*time.Second, func() error {
		if _, _, in := l.counts(id); in != want {
			return fmt.Errorf("partition %d in the leader's session: %v, want %v", id, in, want)
		}
		return nil
	})
}

// TestFetcherLooksOnlyAtPartitionsThatJoin: a partition joining a fetcher that follows
// many is looked at alone, not with every other partition (a bulk creation adds
// partitions to fetchers of tens of thousands many times a second; each addition cost
// a copy of the fetcher's partitions and a look at every one of them). The throttle
// check is asked once for each partition a round looks at.
func TestFetcherLooksOnlyAtPartitionsThatJoin(t *testing.T) {
	const followed, joining = 200, 5
	l, addr := newFakeLeader(t)
	l.quiet = true // else every answer names every partition, and each is looked at again
	var looks atomic.Int64
	ids := make([]int32, followed)
	for i := range ids {
		ids[i] = int32(i)
	}
	fs, _ := newFollowingPartitions(t, addr, FetcherConfig{MaxWait: 50 * time.Millisecond,
		Throttled: func(string, int32) bool { looks.Add(1); return false }}, ids...)
	for _, id := range ids {
		inLeaderSession(t, l, id, true)
	}
	before := looks.Load()
	for i := range int32(joining) {
		followOne(t, fs, followed+i)
		inLeaderSession(t, l, followed+i, true)
	}
	// One full check (every fullCheckEvery) may fall in the window; a look at every
	// partition for each one that joined is joining × followed.
	if n := looks.Load() - before; n >= 2*followed {
		t.Fatalf("%d partitions looked at while %d joined a fetcher of %d: each join looks at every partition", n, joining, followed)
	}
}

// TestFetcherForgetsAnUnfollowedPartitionAndTakesItBack: a partition unfollowed leaves
// the leader's session (forgotten in an incremental fetch) while the others stay, and
// one followed again joins it and replicates, as does one unfollowed and followed again
// at once.
func TestFetcherForgetsAnUnfollowedPartitionAndTakesItBack(t *testing.T) {
	l, addr := newFakeLeader(t)
	fs, parts := newFollowingPartitions(t, addr, FetcherConfig{MaxWait: 50 * time.Millisecond}, 0, 1, 2)
	for id := range int32(3) {
		inLeaderSession(t, l, id, true)
	}
	fs.Unfollow(parts[1])
	inLeaderSession(t, l, 1, false)
	inLeaderSession(t, l, 0, true)
	inLeaderSession(t, l, 2, true)
	l.appendBatch(1, 3, 1)
	l.appendBatch(2, 2, 1)
	reaches(t, parts[2], 2)
	if got := parts[1].State().LogEndOffset; got != 0 {
		t.Fatalf("an unfollowed partition replicated to %d", got)
	}
	fs.Follow(parts[1], 0)
	reaches(t, parts[1], 3)

	fs.Unfollow(parts[0])
	fs.Follow(parts[0], 0)
	l.appendBatch(0, 4, 1)
	reaches(t, parts[0], 4)
	inLeaderSession(t, l, 0, true)
}
