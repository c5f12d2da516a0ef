package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/replication"
)

// ISR changes submitted while an AlterPartition request is in flight go to the
// controller together in the next request, committed as one metadata entry, and each
// caller gets its own outcome.
func TestISRChangesAreBatched(t *testing.T) {
	const partitions = 200
	b := startTestBroker(t, "", nil)
	mustCreateTopic(t, newAdmin(t, b), "batched", partitions, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b.partitions.waitReconciled(ctx, b.Image().Offset)
	before := b.Image()
	entriesBefore := b.machine.Stats().Entries
	release := stallFor(t, &b.stalls.controllerOp)
	errs := make([]error, partitions+1)
	var wg sync.WaitGroup
	submit := func(i int, p int32, leaderEpoch, partitionEpoch int32) {
		defer wg.Done()
		errs[i] = b.alterISR(replication.ISRChange{Topic: "batched", Partition: p,
			LeaderEpoch: leaderEpoch, PartitionEpoch: partitionEpoch, ISR: []int32{b.NodeID()}})
	}
	for i, p := range before.Topic("batched").Partitions {
		wg.Add(1)
		go submit(i, p.ID, p.LeaderEpoch, p.PartitionEpoch)
	}
	wg.Add(1)
	go submit(partitions, 0, 0, -5) // a stale partition epoch: rejected, alone
	testwait.For(t, 10*time.Second, func() error {
		b.isrChanges.mu.Lock()
		defer b.isrChanges.mu.Unlock()
		if n := len(b.isrChanges.pending) + b.isrChanges.inFlight; n < partitions+1 {
			return fmt.Errorf("%d of %d changes submitted", n, partitions+1)
		}
		return nil
	})
	close(release)
	wg.Wait()
	for i := range partitions {
		if errs[i] != nil {
			t.Fatalf("change %d: %v", i, errs[i])
		}
	}
	if errs[partitions] == nil {
		t.Fatal("a change with a stale partition epoch was accepted")
	}
	after := b.Image()
	for _, p := range after.Topic("batched").Partitions {
		if want := before.Topic("batched").Partitions[p.ID].PartitionEpoch + 1; p.PartitionEpoch != want {
			t.Fatalf("partition %d: partition epoch %d, want %d", p.ID, p.PartitionEpoch, want)
		}
	}
	// The changes submitted before the first request went in it, the rest (but the
	// stale duplicate) in one more request, the duplicate in a third: the entries the
	// state machine applied (not the Raft index, which also counts the barriers that
	// carry each write's commit to the followers, raft_commit_nudge.go).
	if entries := b.machine.Stats().Entries - entriesBefore; entries > 3 {
		t.Fatalf("%d ISR changes took %d metadata entries", partitions, entries)
	}
}

// An ISR change goes under its replica's topic id: a change of a topic deleted and
// re-created under its name since (another id) is refused as of an unknown partition,
// never applied to the new topic; one without an id takes the image's.
func TestISRChangeGoesUnderItsTopicID(t *testing.T) {
	b := startTestBroker(t, "", nil)
	mustCreateTopic(t, newAdmin(t, b), "by-id", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b.partitions.waitReconciled(ctx, b.Image().Offset)
	p := b.Image().Topic("by-id").Partitions[0]
	change := replication.ISRChange{Topic: "by-id", TopicID: [16]byte{9, 9, 9}, Partition: 0,
		LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: []int32{b.NodeID()}}
	if err := b.alterISR(change); !errors.Is(err, replication.ErrISRChangeRejected) {
		t.Fatalf("a change under another topic id: %v, want it rejected", err)
	}
	if got := b.Image().Topic("by-id").Partitions[0].PartitionEpoch; got != p.PartitionEpoch {
		t.Fatalf("partition epoch %d after a change under another topic id, want %d", got, p.PartitionEpoch)
	}
	change.TopicID = [16]byte{}
	if err := b.alterISR(change); err != nil {
		t.Fatalf("a change without a topic id: %v", err)
	}
}
