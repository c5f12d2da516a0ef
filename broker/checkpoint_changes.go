package broker

import (
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/segment"
)

// offsetCheckpoints is a set of the log directory's three offset checkpoint files.
type offsetCheckpoints uint8

const (
	highWatermarkCheckpoint offsetCheckpoints = 1 << iota // replication-offset-checkpoint
	recoveryPointCheckpoint                               // recovery-point-offset-checkpoint
	logStartCheckpoint                                    // log-start-offset-checkpoint

	everyOffsetCheckpoint = highWatermarkCheckpoint | recoveryPointCheckpoint | logStartCheckpoint
)

// changedCheckpoints returns the offset checkpoint files whose content entries would
// change from what the last periodic write left (written: every line of the three
// files, nil before the first write of this start or after a failed one). A replica
// that came or went changes all three; otherwise a file changes when one of its
// offsets moved. entries name each replica once (parts and carried are disjoint), so
// the same count with every key found is the same set.
func changedCheckpoints(written map[segment.TopicPartition]replication.CloseOffsets, entries []checkpointEntry) offsetCheckpoints {
	if written == nil || len(written) != len(entries) {
		return everyOffsetCheckpoint
	}
	var changed offsetCheckpoints
	for _, e := range entries {
		w, ok := written[e.tp]
		if !ok {
			return everyOffsetCheckpoint
		}
		if w.HighWatermark != e.off.HighWatermark {
			changed |= highWatermarkCheckpoint
		}
		if w.RecoveryPoint != e.off.RecoveryPoint {
			changed |= recoveryPointCheckpoint
		}
		if w.LogStartOffset != e.off.LogStartOffset {
			changed |= logStartCheckpoint
		}
	}
	return changed
}

// rememberCheckpoints returns written updated to entries once the files of changed
// were written from them (the others already held the same offsets): in place when
// only offsets moved, a new map when the set of replicas changed.
func rememberCheckpoints(written map[segment.TopicPartition]replication.CloseOffsets, entries []checkpointEntry, changed offsetCheckpoints) map[segment.TopicPartition]replication.CloseOffsets {
	if changed == everyOffsetCheckpoint {
		written = make(map[segment.TopicPartition]replication.CloseOffsets, len(entries))
	}
	for _, e := range entries {
		written[e.tp] = e.off
	}
	return written
}
