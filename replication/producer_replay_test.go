package replication

import (
	"os"
	"testing"

	"github.com/petrel-broker/petrel/segment"
)

// openReplica opens dir's log as the broker does at a start (clean or not), loads its
// producer state and makes it the leader.
func openReplica(t *testing.T, dir string, cfg segment.Config, clean bool) (*Partition, ProducerLoadReport) {
	t.Helper()
	p, report, _ := openLeader(t, dir, cfg, segment.OpenOptions{CleanShutdown: clean})
	return p, report
}

// openLeader opens dir's log with opts, loads its producer state and makes it the
// leader, its high watermark at its log end; it returns the open's reports too.
func openLeader(t *testing.T, dir string, cfg segment.Config, opts segment.OpenOptions) (*Partition, ProducerLoadReport, *segment.RecoveryReport) {
	t.Helper()
	log, rep, err := segment.Open(dir, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	p := NewPartition("t", 0, log, log.LogEndOffset(), Options{BrokerID: 0})
	t.Cleanup(func() { p.Stop(false) })
	report, err := p.LoadProducerState(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.BecomeLeaderOf(0, 0, []int32{0}, []int32{0}); err != nil {
		t.Fatal(err)
	}
	return p, report, rep
}

// snapshotsIn lists dir's producer snapshot offsets.
func snapshotsIn(t *testing.T, dir string) []int64 {
	t.Helper()
	offs, err := ProducerSnapshotOffsets(dir)
	if err != nil {
		t.Fatal(err)
	}
	return offs
}

// A clean close of a replica with few batches since its last snapshot (or since its log
// start, with none) takes no snapshot: the next start replays those batches and knows
// the same producers, so a producer's retry is still answered as a duplicate. Past
// shutdownReplayBatches, or once the log start has moved past where the replay would
// start, the close snapshots as Kafka does.
func TestCleanCloseLeavesAShortTailToReplay(t *testing.T) {
	cfg := segment.DefaultConfig()
	dir := t.TempDir()
	p, _ := openReplica(t, dir, cfg, false)
	for seq := int32(0); seq < 6; seq += 2 {
		if _, err := p.AppendAsLeader(idempotentBatch(2, 7, 0, seq), 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := p.CloseClean(); err != nil {
		t.Fatal(err)
	}
	if offs := snapshotsIn(t, dir); len(offs) != 0 {
		t.Fatalf("a close 3 batches after the log start took snapshots %v", offs)
	}

	p, report := openReplica(t, dir, cfg, true)
	if report.SnapshotOffset != -1 || report.BatchesReplayed != 3 || report.Producers != 1 {
		t.Fatalf("the start after the close: %+v, want no snapshot, 3 batches replayed, 1 producer", report)
	}
	retry, err := p.AppendAsLeader(idempotentBatch(2, 7, 0, 4), 0)
	if err != nil || retry.FirstOffset != 4 || p.State().LogEndOffset != 6 {
		t.Fatalf("a retry of the last batch: %+v %v, log end %d; want its offset 4 again, nothing written", retry, err, p.State().LogEndOffset)
	}
	for seq := int32(6); seq < 6+2*shutdownReplayBatches; seq += 2 {
		if _, err := p.AppendAsLeader(idempotentBatch(2, 7, 0, seq), 0); err != nil {
			t.Fatal(err)
		}
	}
	leo := p.State().LogEndOffset
	if _, _, err := p.CloseClean(); err != nil {
		t.Fatal(err)
	}
	if offs := snapshotsIn(t, dir); len(offs) != 1 || offs[0] != leo {
		t.Fatalf("a close %d batches after the log start took snapshots %v, want one at %d", 3+shutdownReplayBatches, offs, leo)
	}

	// From the snapshot: one more batch, and the close leaves it to the replay.
	p, report = openReplica(t, dir, cfg, true)
	if report.SnapshotOffset != leo || report.BatchesReplayed != 0 {
		t.Fatalf("the start after the second close: %+v, want the snapshot at %d and no replay", report, leo)
	}
	if _, err := p.AppendAsLeader(idempotentBatch(2, 7, 0, 6+2*shutdownReplayBatches), 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.CloseClean(); err != nil {
		t.Fatal(err)
	}
	if offs := snapshotsIn(t, dir); len(offs) != 1 {
		t.Fatalf("a close one batch after a snapshot took snapshots %v", offs)
	}

	// The log start moved past the snapshot: the replay would miss the batches between,
	// so the close snapshots.
	p, report = openReplica(t, dir, cfg, true)
	if report.SnapshotOffset != leo || report.BatchesReplayed != 1 {
		t.Fatalf("the start after the third close: %+v, want the snapshot at %d and 1 batch replayed", report, leo)
	}
	if _, err := p.DeleteRecordsBefore(leo + 1); err != nil {
		t.Fatal(err)
	}
	end := p.State().LogEndOffset
	if _, _, err := p.CloseClean(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ProducerSnapshotPath(dir, end)); err != nil {
		t.Fatalf("no snapshot at the log end %d after the log start moved past the last one: %v", end, err)
	}
}
