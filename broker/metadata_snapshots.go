package broker

import (
	"errors"
	"time"

	"github.com/hashicorp/raft"
)

// metadataSnapshotLoop takes metadata snapshots the way Kafka's metadata log does, so
// that a restarted node restores a recent image and replays few entries after it:
// once metadata.log.max.record.bytes.between.snapshots bytes of records were applied
// since the last snapshot, and once metadata.log.max.snapshot.interval.ms passed with
// any record applied since. hashicorp/raft's own trigger counts entries only, and one
// CreateTopics entry of thousands of partitions is one entry. Each node snapshots its
// own image (as every Kafka node does); Raft then trims the log before the snapshot,
// keeping its trailing entries for followers that lag.
func (b *Broker) metadataSnapshotLoop() {
	maxBytes := b.cfg.int64Value("metadata.log.max.record.bytes.between.snapshots")
	interval := b.cfg.durationMs("metadata.log.max.snapshot.interval.ms")
	var tick <-chan time.Time
	if interval > 0 {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		changed := b.machine.Changed()
		if b.machine.Stats().BytesSinceSnapshot >= maxBytes {
			b.takeMetadataSnapshot("bytes")
		}
		select {
		case <-changed:
		case <-tick:
			if b.machine.Stats().EntriesSinceSnapshot > 0 {
				b.takeMetadataSnapshot("interval")
			}
		case <-b.stop:
			return
		}
	}
}

// takeMetadataSnapshot asks Raft for a snapshot and waits for it (Raft writes it on its
// snapshot goroutine; no lock is held here).
func (b *Broker) takeMetadataSnapshot(reason string) {
	if b.shuttingDown.Load() {
		return // a snapshot cannot be interrupted: it would hold up the stop
	}
	start := time.Now()
	before := b.machine.Stats()
	err := b.raft.raft.Snapshot().Error()
	switch {
	case err == nil:
		b.logger.Info("metadata snapshot taken", "reason", reason, "entries_since_last", before.EntriesSinceSnapshot,
			"bytes_since_last", before.BytesSinceSnapshot, "took", time.Since(start).Round(time.Millisecond).String())
	case errors.Is(err, raft.ErrNothingNewToSnapshot), errors.Is(err, raft.ErrRaftShutdown):
	default:
		b.logger.Warn("metadata snapshot failed", "reason", reason, "error", err)
	}
}
