package broker

import (
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/segment"
)

// replicaClosers bounds the goroutines that close the replicas at a clean shutdown, as
// replicaOpeners bounds those that open them (Kafka closes its logs on
// num.recovery.threads.per.data.dir threads, its recovery pool): a replica with
// unflushed records or producer state waits for the disk, so more closers than cores
// overlap those waits.
const replicaClosers = replicaOpeners

// replicaCloseChunk is how many replicas a closer takes at a time: an idle replica
// closes in about a microsecond, less than handing it to a goroutine would cost.
const replicaCloseChunk = 256

// closedReplica is the outcome of one replica's CloseClean (a replica stopped before
// the close: its offsets then, and ErrPartitionStopped).
type closedReplica struct {
	tp      segment.TopicPartition
	topicID metadata.Uuid
	off     replication.CloseOffsets
	err     error
	state   []byte // the log's description after a clean close (clean_log_states.go), or nil
}

// closeReplicas closes every replica of parts exactly once (CloseClean), replicaClosers
// at a time, and returns each outcome at its index.
func closeReplicas(parts []*localPartition) []closedReplica {
	out := make([]closedReplica, len(parts))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(replicaClosers, (len(parts)+replicaCloseChunk-1)/replicaCloseChunk) {
		wg.Go(func() {
			for {
				start := int(next.Add(replicaCloseChunk)) - replicaCloseChunk
				if start >= len(parts) {
					return
				}
				for i := start; i < min(start+replicaCloseChunk, len(parts)); i++ {
					lp := parts[i]
					off, _, err := lp.CloseClean()
					out[i] = closedReplica{tp: segment.TopicPartition{Topic: lp.Topic, Partition: lp.ID},
						topicID: lp.topicID, off: off, err: err}
					if st, ok := lp.ShutdownState(); ok && err == nil {
						out[i].state = segment.AppendShutdownState(nil, st)
					}
				}
			}
		})
	}
	wg.Wait()
	return out
}

// checkpointEntry is one replica's line in the per-log-dir checkpoints.
type checkpointEntry struct {
	tp      segment.TopicPartition
	topicID metadata.Uuid // zero when unknown (a carried line): not in the topic-id checkpoint
	off     replication.CloseOffsets
}

// writeCheckpoints writes the offset checkpoints of files (high watermark, recovery
// point, log start) of entries (sorted here; one file each for the whole log directory,
// as Kafka writes them), and at a clean close (states not nil) the topic-id checkpoint
// and the logs' descriptions states, closed at brokerEpoch, too, all at once: their
// fsyncs overlap.
func (pm *partitionManager) writeCheckpoints(entries []checkpointEntry, files offsetCheckpoints, states []cleanLogState, brokerEpoch int64) error {
	slices.SortFunc(entries, func(a, b checkpointEntry) int { return segment.CompareTopicPartitions(a.tp, b.tp) })
	keys := make([]segment.TopicPartition, len(entries))
	for i, e := range entries {
		keys[i] = e.tp
	}
	column := func(get func(replication.CloseOffsets) int64) []int64 {
		col := make([]int64, len(entries))
		for i, e := range entries {
			col[i] = get(e.off)
		}
		return col
	}
	var writes []func() error
	for _, f := range []struct {
		file offsetCheckpoints
		name string
		get  func(replication.CloseOffsets) int64
	}{
		{highWatermarkCheckpoint, segment.ReplicationOffsetCheckpointFile, func(o replication.CloseOffsets) int64 { return o.HighWatermark }},
		{recoveryPointCheckpoint, segment.RecoveryPointOffsetCheckpointFile, func(o replication.CloseOffsets) int64 { return o.RecoveryPoint }},
		{logStartCheckpoint, segment.LogStartOffsetCheckpointFile, func(o replication.CloseOffsets) int64 { return o.LogStartOffset }},
	} {
		if files&f.file != 0 {
			writes = append(writes, func() error {
				return segment.WriteSortedOffsetCheckpoint(filepath.Join(pm.dir, f.name), keys, column(f.get))
			})
		}
	}
	if states != nil {
		writes = append(writes, func() error {
			return segment.WriteFileAtomic(filepath.Join(pm.dir, cleanLogStatesFile), encodeCleanLogStates(brokerEpoch, states))
		})
		writes = append(writes, func() error {
			named := make([]segment.TopicPartition, 0, len(entries))
			ids := make([]metadata.Uuid, 0, len(entries))
			for _, e := range entries {
				if e.topicID != (metadata.Uuid{}) {
					named, ids = append(named, e.tp), append(ids, e.topicID)
				}
			}
			return writeSortedTopicIDCheckpoint(filepath.Join(pm.dir, topicIDCheckpointFile), named, ids)
		})
	}
	errs := make([]error, len(writes))
	var wg sync.WaitGroup
	for i, w := range writes {
		wg.Go(func() { errs[i] = w() })
	}
	wg.Wait()
	return errors.Join(errs...)
}
