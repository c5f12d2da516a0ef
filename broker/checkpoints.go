package broker

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/segment"
)

// The log directory's offset checkpoints (replication-offset-checkpoint,
// recovery-point-offset-checkpoint, log-start-offset-checkpoint) and the clean shutdown
// marker, across starts that fail, stop early or crash (docs/durability.md, "What a
// failure does"):
//
//   - every write records every replica the directory holds: the open ones with their
//     own offsets, the others (not yet opened by this start, or offline) with their
//     carried line, so a start that has not opened everything never drops or zeroes a
//     replica's log start offset or recovery point;
//   - a start that fails writes nothing (abandon), and the marker is removed only before
//     the first replica opens, so a failed start leaves the directory as it found it;
//   - writes are serialised (checkpointMu) and each reads the offsets after the previous
//     one ended, so the files never go back.

// readOffsetCheckpoints reads the three offset checkpoints of the log directory dir into
// one line per replica. An unreadable file is ignored with a warning, as in Kafka: its
// offsets are then 0 (every segment recovered, log start at the first segment, high
// watermark raised by the leader).
func readOffsetCheckpoints(dir string, logger hclog.Logger) map[segment.TopicPartition]replication.CloseOffsets {
	out := map[segment.TopicPartition]replication.CloseOffsets{}
	for _, f := range []struct {
		name, warning string
		set           func(o *replication.CloseOffsets, v int64)
	}{
		{segment.ReplicationOffsetCheckpointFile, "ignoring unreadable high watermark checkpoint",
			func(o *replication.CloseOffsets, v int64) { o.HighWatermark = v }},
		{segment.RecoveryPointOffsetCheckpointFile, "ignoring unreadable recovery point checkpoint; every segment will be recovered",
			func(o *replication.CloseOffsets, v int64) { o.RecoveryPoint = v }},
		{segment.LogStartOffsetCheckpointFile, "ignoring unreadable log start checkpoint",
			func(o *replication.CloseOffsets, v int64) { o.LogStartOffset = v }},
	} {
		m, err := segment.ReadOffsetCheckpoint(filepath.Join(dir, f.name))
		if err != nil {
			logger.Warn(f.warning, "error", err)
			continue
		}
		for tp, v := range m {
			o := out[tp]
			f.set(&o, v)
			out[tp] = o
		}
	}
	return out
}

// removeCleanShutdownMarker removes the clean shutdown marker, durably (the directory
// fsynced), before the first replica opens: from then on this run writes to the logs,
// and a crash of it must never be taken for a clean shutdown (Kafka deletes it as it
// starts loading, KAFKA-10471). A start that fails or stops before it opens a replica
// has changed no log, so it leaves the marker, and the next start's clean open, as they
// were. Once per start; every open returns its error.
func (pm *partitionManager) removeCleanShutdownMarker() error {
	pm.markerOnce.Do(func() {
		if !pm.cleanShutdown {
			return
		}
		// The logs' descriptions go first: a marker is never found without those its
		// close wrote, nor with older ones (clean_log_states.go).
		for _, name := range []string{cleanLogStatesFile, cleanShutdownFile} {
			if err := os.Remove(filepath.Join(pm.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				pm.markerErr = err
				return
			}
		}
		pm.markerErr = segment.SyncDir(pm.dir)
	})
	return pm.markerErr
}

// forgetNotHosted drops the carried lines and the cleaner's offsets of the replicas the
// first caught-up image does not assign here (live): their directories were renamed for
// deletion (removeStrays) or are gone.
func (pm *partitionManager) forgetNotHosted(live map[segment.TopicPartition]bool) {
	var cleaned []segment.TopicPartition
	pm.mu.Lock()
	for tp := range pm.carried {
		if !live[tp] {
			delete(pm.carried, tp)
		}
	}
	for tp := range pm.compactedOnce {
		if !live[tp] {
			cleaned = append(cleaned, tp)
		}
	}
	pm.mu.Unlock()
	for _, tp := range cleaned {
		pm.forgetCleaned(tp)
	}
}

// openAndCarried returns the open replicas and a checkpoint entry for each carried line
// (with its topic id when a clean start's topic-id checkpoint named it), read together
// under mu so that no replica is missed or counted twice. Callers hold checkpointMu.
func (pm *partitionManager) openAndCarried() ([]*localPartition, []checkpointEntry) {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	parts := make([]*localPartition, 0, len(pm.parts))
	for _, lp := range pm.parts {
		parts = append(parts, lp)
	}
	entries := make([]checkpointEntry, 0, len(pm.parts)+len(pm.carried))
	for tp, off := range pm.carried {
		entries = append(entries, checkpointEntry{tp: tp, topicID: pm.cleanTopicIDs[tp], off: off})
	}
	return parts, entries
}

// checkpoint writes the high watermark, recovery point and log start checkpoints: the
// open replicas' current offsets and the carried lines of the others. The maintenance
// loop calls it periodically, DeleteRecords before it answers. A file none of whose
// lines changed since this start's last write is not written again
// (checkpoint_changes.go): it already holds those lines, so a crash finds the same file
// either way. The first write of a start, and the one after a failed write, writes all
// three.
func (pm *partitionManager) checkpoint() error {
	pm.checkpointMu.Lock()
	defer pm.checkpointMu.Unlock()
	parts, entries := pm.openAndCarried()
	for _, lp := range parts {
		entries = append(entries, checkpointEntry{tp: segment.TopicPartition{Topic: lp.Topic, Partition: lp.ID}, off: lp.CheckpointOffsets()})
	}
	changed := changedCheckpoints(pm.checkpointed, entries)
	if changed == 0 {
		return nil
	}
	if err := pm.writeCheckpoints(entries, changed, nil, 0); err != nil {
		pm.checkpointed = nil // whatever was left on disk, the next write writes all three
		return err
	}
	pm.checkpointed = rememberCheckpoints(pm.checkpointed, entries, changed)
	return nil
}

// close closes every replica (replica_close.go: flush, producer snapshot, stop, several
// at once), then writes the checkpoints of those it closed and the carried lines and,
// when every replica closed cleanly and every log is recovered, the topic-id checkpoint,
// the logs' descriptions (clean_log_states.go) and the clean-shutdown marker, last. A
// replica found stopped is checkpointed with the offsets it stopped with, and fails the
// close (no marker).
func (pm *partitionManager) close() error {
	pm.checkpointMu.Lock()
	defer pm.checkpointMu.Unlock()
	parts, entries := pm.openAndCarried()
	closed := closeReplicas(parts)
	var errs []error
	states := make([]cleanLogState, 0, len(closed))
	for _, c := range closed {
		if c.err != nil {
			errs = append(errs, c.err)
		}
		entries = append(entries, checkpointEntry{tp: c.tp, topicID: c.topicID, off: c.off})
		if c.state != nil {
			states = append(states, cleanLogState{tp: c.tp, state: c.state})
		}
	}
	if pm.b.offline.dirFailure() != nil {
		// Nothing is written to an offline log directory (offline_replicas.go), as Kafka
		// skips offline directories at shutdown: its checkpoints stay as they were, no
		// marker, and the next start recovers every log.
		return errors.Join(errs...)
	}
	clean := len(errs) == 0 && pm.everyLogRecovered()
	pm.checkpointed = nil
	if !clean {
		states = nil
	}
	epoch := pm.b.brokerEpoch.Load() // the marker's, and the descriptions'
	errs = append(errs, pm.writeCheckpoints(entries, everyOffsetCheckpoint, states, epoch))
	if err := errors.Join(errs...); err != nil || !clean {
		return err // without the marker, the next start recovers them all
	}
	// Whole or absent, and durable before Shutdown returns (a temporary file, fsync,
	// rename, directory fsync: two fsyncs per log directory and shutdown).
	return segment.WriteFileAtomic(filepath.Join(pm.dir, cleanShutdownFile), cleanShutdownMarkerBytes(epoch))
}

// everyLogRecovered reports whether every partition directory is consistent as of this
// close, so that the clean shutdown marker may tell the next start to trust them all
// (Kafka writes it only once every log was loaded): after a clean start (a replica not
// opened since is untouched), or after an unclean one once the first reconciliation has
// opened, and so recovered, every replica the image assigns here (the rest are strays,
// renamed for deletion). A replica that is offline (its log failed) was not closed
// cleanly. Called once the reconciler has stopped.
func (pm *partitionManager) everyLogRecovered() bool {
	return (pm.cleanShutdown || pm.straysRemoved) && pm.b.offline.count() == 0
}

// abandon releases every log's files without checkpoints or marker: a crash (Kill), and
// a start that fails, which must write nothing (its replicas are not all open, and the
// marker it found is still true).
func (pm *partitionManager) abandon() {
	for _, lp := range pm.all() {
		lp.Stop(false)
	}
}
