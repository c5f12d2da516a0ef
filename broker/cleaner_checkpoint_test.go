package broker

import (
	"fmt"
	"maps"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/segment"
)

// testCleaner is a log cleaner over a partition manager holding one open replica per
// partition of parts (topic "c"), without a broker around them.
func testCleaner(t *testing.T, parts int) (*logCleaner, string) {
	t.Helper()
	dir := t.TempDir()
	pm := &partitionManager{dir: dir, parts: map[segment.TopicPartition]*localPartition{}}
	for i := range parts {
		log, _, err := segment.Open(filepath.Join(dir, segment.PartitionDirName("c", int32(i))), segment.DefaultConfig(), segment.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p := replication.NewPartition("c", int32(i), log, 0, replication.Options{})
		t.Cleanup(func() { p.Stop(false) })
		pm.parts[segment.TopicPartition{Topic: "c", Partition: int32(i)}] = &localPartition{Partition: p}
	}
	path := filepath.Join(dir, segment.CleanerOffsetCheckpointFile)
	c := &logCleaner{pm: pm, logger: hclog.NewNullLogger(), path: path, firstDirty: map[segment.TopicPartition]int64{}}
	return c, path
}

// Several cleaner threads finish passes at once: each writes cleaner-offset-checkpoint,
// and every write succeeds and leaves a whole file; the last one holds every thread's
// last pass.
func TestCleanerCheckpointConcurrentWrites(t *testing.T) {
	const threads, passes = 8, 25
	c, path := testCleaner(t, threads)
	var wg sync.WaitGroup
	errs := make(chan error, threads*passes)
	for i := range threads {
		wg.Go(func() {
			tp := segment.TopicPartition{Topic: "c", Partition: int32(i)}
			for pass := 1; pass <= passes; pass++ {
				c.mu.Lock()
				c.firstDirty[tp] = int64(pass * 10)
				c.mu.Unlock()
				if err := c.WriteCheckpoint(); err != nil {
					errs <- fmt.Errorf("thread %d pass %d: %w", i, pass, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got, err := segment.ReadOffsetCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	want := maps.Clone(c.firstDirty)
	c.mu.Unlock()
	if !maps.Equal(got, want) {
		t.Fatalf("checkpoint %v, want %v", got, want)
	}
}

// A partition the cleaner knows but whose replica is not open (not yet opened by a
// start, or offline) keeps its line: its log has offset gaps that recovery must accept.
func TestCleanerCheckpointKeepsReplicasNotOpen(t *testing.T) {
	c, path := testCleaner(t, 1)
	notOpen := segment.TopicPartition{Topic: "compacted", Partition: 3}
	c.firstDirty[notOpen] = 42
	c.firstDirty[segment.TopicPartition{Topic: "c", Partition: 0}] = 7
	if err := c.WriteCheckpoint(); err != nil {
		t.Fatal(err)
	}
	got, err := segment.ReadOffsetCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	if got[notOpen] != 42 || len(got) != 2 {
		t.Fatalf("checkpoint %v, want the replica not open kept at 42", got)
	}
	c.forget(notOpen) // its data is deleted
	if err := c.WriteCheckpoint(); err != nil {
		t.Fatal(err)
	}
	if got, err := segment.ReadOffsetCheckpoint(path); err != nil || len(got) != 1 {
		t.Fatalf("after forget: %v (%v), want only the open replica", got, err)
	}
}
