package replication

import (
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
)

// With the topic ids and its broker epoch given, a fetcher's fetches are v15: they
// name the topic by id (partitions and forgotten partitions alike), carry the broker's
// id and epoch (KIP-903), and the answers, which name the topic by id too, are applied;
// without them the fetches stay v12.
func TestFetcherFetchesByTopicIDWithItsBrokerEpoch(t *testing.T) {
	id := [16]byte{7, 7, 7}
	l, addr := newFakeLeader(t)
	fs, parts := newFollowingPartitions(t, addr, FetcherConfig{MaxWait: 50 * time.Millisecond,
		TopicID:     func(topic string) [16]byte { return map[string][16]byte{"t": id}[topic] },
		BrokerEpoch: func() int64 { return 42 }}, 0, 1)
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
		t.Fatalf("without topic ids and a broker epoch the fetch is v%d, want v12", l2.version)
	}
}
