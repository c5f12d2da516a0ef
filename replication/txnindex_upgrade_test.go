package replication

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/petrel-broker/petrel/segment"
)

// A partition directory written before .txnindex files existed: no index files, and a
// producer state snapshot of version 2 at the log end. The reopened partition must not
// trust that snapshot for the aborted transactions below it: it replays the log from
// its start once, finds every aborted transaction and writes the index files.
func TestTxnIndexUpgradeFromSnapshotV2(t *testing.T) {
	cfg := segment.DefaultConfig()
	cfg.SegmentBytes = 300
	p, dir := newLeader(t, cfg)
	for round := range 3 {
		seq := int32(round * 2)
		if _, err := p.AppendAsLeader(transactionalBatch(2, 5, 0, seq), 0); err != nil {
			t.Fatal(err)
		}
		if _, err := p.AppendAsLeader(markerBatch(5, 0, false), 0); err != nil {
			t.Fatal(err)
		}
	}
	want := p.producers.Aborted()
	if len(want) != 3 {
		t.Fatalf("%d aborted transactions before the upgrade: %+v", len(want), want)
	}
	leo, hw := p.log.LogEndOffset(), p.State().HighWatermark
	indexes, _ := filepath.Glob(filepath.Join(dir, "*"+segment.TxnIndexFileSuffix))
	snapshots, _ := filepath.Glob(filepath.Join(dir, "*"+ProducerSnapshotSuffix))
	for _, f := range append(indexes, snapshots...) {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	// An old build's snapshot: version 2, no producers, CRC-32C of the bytes after it.
	old := make([]byte, 10)
	binary.BigEndian.PutUint16(old, 2)
	binary.BigEndian.PutUint32(old[2:], segment.CRC32C(old[6:]))
	if err := os.WriteFile(ProducerSnapshotPath(dir, leo), old, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeProducerSnapshot(old); err != nil {
		t.Fatalf("the hand-made v2 snapshot does not decode: %v", err)
	}

	log, _, err := segment.Open(dir, cfg, segment.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q := NewPartition("t", 0, log, hw, Options{BrokerID: 0})
	if _, err := q.LoadProducerState(0, 0); err != nil {
		t.Fatal(err)
	}
	if got := q.producers.Aborted(); !slices.Equal(got, want) {
		t.Fatalf("after the upgrade: aborted %+v, want %+v", got, want)
	}
	if got, err := q.log.AbortedTxns(); err != nil || !slices.Equal(got, want) {
		t.Fatalf("after the upgrade: indexed %+v (%v), want %+v", got, err, want)
	}
}
