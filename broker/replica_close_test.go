package broker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/segment"
)

// waitLocalReplicas polls until n local replicas are open.
func waitLocalReplicas(t *testing.T, b *Broker, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(b.partitions.all()) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d replicas open", len(b.partitions.all()), n)
		}
		time.Sleep(10 * time.Millisecond) // polling a state with a deadline
	}
}

// TestShutdownClosesEveryReplicaOnce: a clean shutdown closes the replicas several at a
// time (more replicas than one closer's share) and each exactly once — a second close
// of one would fail the shutdown with ErrPartitionStopped — and checkpoints every one
// of them in the three offset checkpoints and the topic-id checkpoint, with the
// clean-shutdown marker.
func TestShutdownClosesEveryReplicaOnce(t *testing.T) {
	const topic, partitions = "closers", 2*replicaCloseChunk + 7
	dir := t.TempDir()
	b := startTestBroker(t, dir, nil)
	mustCreateTopic(t, newAdmin(t, b), topic, partitions, nil)
	waitLocalReplicas(t, b, partitions)
	produceN(t, b, topic, 3) // a few replicas with records, the rest idle
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	for _, lp := range b.partitions.all() {
		if lp.State().Role != replication.Stopped {
			t.Fatalf("partition %d not stopped", lp.ID)
		}
	}
	logs := filepath.Join(dir, "logs")
	for _, name := range []string{segment.ReplicationOffsetCheckpointFile, segment.RecoveryPointOffsetCheckpointFile, segment.LogStartOffsetCheckpointFile} {
		got, err := segment.ReadOffsetCheckpoint(filepath.Join(logs, name))
		if err != nil || len(got) != partitions {
			t.Fatalf("%s: %d entries (%v), want %d", name, len(got), err, partitions)
		}
	}
	ids, err := readTopicIDCheckpoint(filepath.Join(logs, topicIDCheckpointFile))
	if err != nil || len(ids) != partitions {
		t.Fatalf("topic-id checkpoint: %d entries (%v), want %d", len(ids), err, partitions)
	}
	if _, err := os.Stat(filepath.Join(logs, cleanShutdownFile)); err != nil {
		t.Fatalf("no clean-shutdown marker: %v", err)
	}
}

// TestShutdownReportsACloseError: a replica that does not close cleanly (here stopped
// before the shutdown) fails the shutdown with its error; the others are still closed
// and checkpointed, the stopped one keeps its line (the offsets it stopped with: never
// dropped, checkpoints.go), but neither the topic-id checkpoint nor the clean-shutdown
// marker is written, so the next start recovers every log.
func TestShutdownReportsACloseError(t *testing.T) {
	const topic = "close-error"
	dir := t.TempDir()
	b := startTestBroker(t, dir, nil)
	mustCreateTopic(t, newAdmin(t, b), topic, 4, nil)
	waitLocalReplicas(t, b, 4)
	if err := b.partitions.get(topic, 2).Stop(false); err != nil {
		t.Fatal(err)
	}
	if err := b.Shutdown(context.Background()); !errors.Is(err, replication.ErrPartitionStopped) {
		t.Fatalf("shutdown: %v, want ErrPartitionStopped", err)
	}
	logs := filepath.Join(dir, "logs")
	if got, err := segment.ReadOffsetCheckpoint(filepath.Join(logs, segment.RecoveryPointOffsetCheckpointFile)); err != nil || len(got) != 4 {
		t.Fatalf("recovery point checkpoint: %v (%v), want the 3 replicas closed and the stopped one", got, err)
	}
	for _, name := range []string{cleanShutdownFile, topicIDCheckpointFile} {
		if _, err := os.Stat(filepath.Join(logs, name)); err == nil {
			t.Fatalf("%s written after a replica failed to close", name)
		}
	}
}
