package broker

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// lastSnapshotIndex is the index of the newest metadata snapshot Raft holds.
func lastSnapshotIndex(b *Broker) uint64 {
	i, _ := strconv.ParseUint(b.raft.raft.Stats()["last_snapshot_index"], 10, 64)
	return i
}

// waitSnapshotAt polls (bounded) until b holds a snapshot at or past index.
func waitSnapshotAt(t *testing.T, b *Broker, index uint64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for lastSnapshotIndex(b) < index {
		if time.Now().After(deadline) {
			t.Fatalf("no metadata snapshot at or past index %d (newest %d)", index, lastSnapshotIndex(b))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A snapshot is taken once metadata.log.max.record.bytes.between.snapshots bytes of
// records were applied, and a restart restores it and replays only what followed.
func TestMetadataSnapshotAfterRecordBytes(t *testing.T) {
	dir := t.TempDir()
	b := startTestBroker(t, dir, map[string]string{"metadata.log.max.record.bytes.between.snapshots": "1"})
	mustCreateTopic(t, newAdmin(t, b), "snap-bytes", 20, nil)
	created := b.Image().Offset
	waitSnapshotAt(t, b, created)
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	b2 := startTestBroker(t, dir, nil)
	if tp := b2.Image().Topic("snap-bytes"); tp == nil || len(tp.Partitions) != 20 {
		t.Fatal("the topic is not in the image restored from the snapshot")
	}
	b2.trace.mu.Lock()
	restored := b2.trace.snapshotIndex
	b2.trace.mu.Unlock()
	if restored < created {
		t.Fatalf("restart restored the snapshot at %d, want at or past the topic's creation at %d", restored, created)
	}
	if st := b2.machine.Stats(); st.SnapshotBytes == 0 {
		t.Fatal("the restart read no snapshot bytes")
	}
}

// With records applied since the last snapshot, one is taken every
// metadata.log.max.snapshot.interval.ms even below the byte threshold.
func TestMetadataSnapshotInterval(t *testing.T) {
	b := startTestBroker(t, "", map[string]string{"metadata.log.max.snapshot.interval.ms": "100"})
	mustCreateTopic(t, newAdmin(t, b), "snap-interval", 1, nil)
	waitSnapshotAt(t, b, b.Image().Offset)
}
