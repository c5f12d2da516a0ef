package replication

// shutdownReplayBatches is the most batch headers a clean close leaves for the next open
// to replay rather than take a producer state snapshot (skipShutdownSnapshotLocked). Each
// costs the open one header read from the active segment, which that open reads anyway;
// a snapshot costs the close a new file and its fsync, and the open a file read.
const shutdownReplayBatches = 64

// producerReplay describes how the next open (rebuildProducerStateLocked) would rebuild
// the producer state held now if no snapshot were taken before it: from the newest
// snapshot, at offset from, or, with none, from the log start offset from, replaying
// batches batch headers. from is -1 when the state did not come from either (a tiered
// restore without a snapshot, a failed rebuild).
type producerReplay struct {
	from    int64
	batches int
}

// skipShutdownSnapshotLocked reports whether a clean close may leave the producer state
// to the next open's replay instead of snapshotting it: the replay starts in the active
// segment (never compacted, never deleted while active), at or above the log start (no
// batch it needs was removed), and reads few headers. The state it rebuilds is the one
// held now: the snapshot or log start it starts from plus every batch appended since,
// with producers idle past producer.id.expiration.ms dropped by that open as by this
// replica's expiration. Kafka snapshots at every close; this only saves a file per
// replica that holds few batches since its last roll, which a shutdown of many such
// replicas spends most of its time making. Callers hold mu.
func (p *Partition) skipShutdownSnapshotLocked() bool {
	r := p.replay
	return r.from >= 0 && r.batches <= shutdownReplayBatches &&
		r.from >= p.log.ActiveSegmentBaseOffset() && r.from >= p.log.LocalLogStartOffset()
}
