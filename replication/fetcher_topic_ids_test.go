package replication

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
)

// With its broker epoch given, a fetcher's fetches are v15: they name each replica's
// topic by the replica's own topic id (partitions and forgotten partitions alike),
// carry the broker's id and epoch (KIP-903), and the answers, which name the topic by
// id too, are applied; without it the fetches stay v12.
func TestFetcherFetchesByTopicIDWithItsBrokerEpoch(t *testing.T) {
	id := [16]byte{7, 7, 7}
	l, addr := newFakeLeader(t)
	fs, _ := newFollowingPartitions(t, addr, FetcherConfig{MaxWait: 50 * time.Millisecond,
		BrokerEpoch: func() int64 { return 42 }})
	parts := []*Partition{followOneOf(t, fs, 0, id), followOneOf(t, fs, 1, id)}
	l.appendBatch(0, 3, 1)
	l.appendBatch(1, 2, 1)
	reaches(t, parts[0], 3)
	reaches(t, parts[1], 2)
	l.mu.Lock()
	version, state, got, other := l.version, l.replicaState, l.topicID, l.otherTopicIDs
	l.mu.Unlock()
	if version != 15 || state.ID != 1 || state.Epoch != 42 {
		t.Fatalf("fetch v%d with replica state %+v, want v15 from replica 1 at broker epoch 42", version, state)
	}
	if got != id || other {
		t.Fatalf("fetches named topic id %v (another one too: %v), want %v", got, other, id)
	}
	fs.Unfollow(parts[1])
	testwait.For(t, 10*time.Second, func() error {
		if _, _, in := l.counts(1); in {
			return fmt.Errorf("partition 1 still in the leader's session")
		}
		return nil
	})
	l.appendBatch(0, 4, 1)
	reaches(t, parts[0], 7)
	l.mu.Lock()
	other = l.otherTopicIDs
	l.mu.Unlock()
	if other {
		t.Fatal("a fetch named another topic id (the forgotten partition's)")
	}

	l2, addr2 := newFakeLeader(t)
	_, byName := newFollowingPartitions(t, addr2, FetcherConfig{MaxWait: 50 * time.Millisecond}, 0)
	l2.appendBatch(0, 1, 1)
	reaches(t, byName[0], 1)
	l2.mu.Lock()
	defer l2.mu.Unlock()
	if l2.version != 12 {
		t.Fatalf("without a broker epoch the fetch is v%d, want v12", l2.version)
	}
}

// A topic deleted and re-created under its name while followed: the new replica is
// fetched under the new id, and the session is renewed (a full fetch naming only the
// new id), so that the leader's session holds nothing of the old id, whose partitions
// its incremental fetches would otherwise keep answering with an error at once; also
// when the new replica's fetch parameters equal the old one's (neither has records).
func TestFetcherRenewsTheSessionWhenATopicChangesIDs(t *testing.T) {
	for _, records := range []int{2, 0} {
		t.Run(fmt.Sprintf("%d records before", records), func(t *testing.T) {
			oldID, newID := [16]byte{1}, [16]byte{2}
			l, addr := newFakeLeader(t)
			fs, _ := newFollowingPartitions(t, addr, FetcherConfig{MaxWait: 50 * time.Millisecond,
				BrokerEpoch: func() int64 { return 42 }})
			old := followOneOf(t, fs, 0, oldID)
			if records > 0 {
				l.appendBatch(0, records, 1)
			}
			testwait.For(t, 10*time.Second, func() error {
				if n, _, in := l.counts(0); n < 2 || !in {
					return fmt.Errorf("%d fetches, partition 0 in the session: %v", n, in)
				}
				return nil
			})
			reaches(t, old, int64(records))
			// The new replica replaces the old one in one refresh of the fetcher's view
			// (its round is parked at the leader meanwhile): the session's entry for the
			// name and partition stands for it.
			renewed := followOneOf(t, fs, 0, newID)
			fs.Unfollow(old)
			l.appendBatch(0, 1, 1)
			reaches(t, renewed, int64(records)+1)
			testwait.For(t, 10*time.Second, func() error {
				l.mu.Lock()
				defer l.mu.Unlock()
				if !slices.Equal(l.fullTopicIDs, [][16]byte{newID}) {
					return fmt.Errorf("the last full fetch named topic ids %v, want only %v", l.fullTopicIDs, newID)
				}
				return nil
			})
		})
	}
}
