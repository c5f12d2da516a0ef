package replication

import "github.com/petrel-broker/petrel/segment"

// CloseOffsets are what the per-log-dir checkpoints record of a replica closed cleanly.
type CloseOffsets struct {
	HighWatermark  int64
	RecoveryPoint  int64
	LogStartOffset int64
}

// CloseClean is a clean shutdown's close of the replica, under its locks once: it
// flushes the log (so that the recovery point is the log end), writes the producer
// snapshot at the log end (so that the next start replays nothing), reads the offsets
// the checkpoints record, and stops the replica as Stop(false) does. A replica that was
// stopped already reports stopped and ErrPartitionStopped (it was not closed cleanly
// here), with the offsets it had when it stopped (CheckpointOffsets). A flush or snapshot
// failure is returned with the offsets as they are (the recovery point then stays where
// the last successful flush left it); the replica is stopped in every case. An idle
// replica (nothing unflushed, nothing ever appended, no open files) costs two lock
// round trips and no system call.
func (p *Partition) CloseClean() (off CloseOffsets, stopped bool, err error) {
	p.flushMu.Lock()
	defer p.flushMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role == Stopped {
		return p.checkpointOffsetsLocked(), true, ErrPartitionStopped
	}
	ferr := p.log.Flush()
	var serr error
	if !p.skipShutdownSnapshotLocked() {
		var written bool
		written, serr = p.writeProducerSnapshotLocked()
		if written {
			serr = p.syncShutdownSnapshotLocked()
		}
	}
	off = p.checkpointOffsetsLocked()
	p.role = Stopped
	p.notifyLocked()
	cerr := p.log.Close()
	for _, e := range []error{ferr, serr, cerr} {
		if e != nil && err == nil {
			err = e
		}
	}
	return off, false, err
}

// syncDir fsyncs a directory (segment.SyncDir); tests count the calls.
var syncDir = segment.SyncDir

// syncShutdownSnapshotLocked makes the shutdown snapshot's rename durable. Kafka's close
// leaves it to the next directory fsync, and a crash soon after only costs a longer
// replay; but the log's description (ShutdownState), fsynced with the clean-shutdown
// marker, names the snapshot and carries the replay choice it allows, so the snapshot
// must survive whatever the description survives. Only a close that wrote a snapshot
// pays it (a replica with few batches since its last roll writes none). A failure is a
// storage error: the log is failed, so the replica is not described and the next
// start loads it from its files.
func (p *Partition) syncShutdownSnapshotLocked() error {
	if err := syncDir(p.log.Dir()); err != nil {
		p.snapshots.forget()
		return p.log.MarkFailed("producer snapshot directory fsync", err)
	}
	return nil
}

// ShutdownState describes the replica's log after a CloseClean that succeeded
// (segment.Log.ShutdownState), with its producer state snapshots when it knows them and
// its producer state as of the log end (producer_snapshot_files.go), for the next clean
// start to open it from; ok is false otherwise.
func (p *Partition) ShutdownState() (st segment.ShutdownState, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok = p.log.ShutdownState()
	if !ok {
		return st, false
	}
	if names, known := p.snapshots.names(); known {
		st.SetOtherFiles(names)
	}
	if p.producers != nil && p.replay.from >= 0 {
		// (A state that did not come from the files, a failed rebuild's empty one or a
		// tiered restore's, is left for the next start to rebuild from them.)
		st.SetOwnerData(describeProducerState(p.log.LogEndOffset(), p.producers, p.replay))
	}
	return st, true
}

// CheckpointOffsets reads the offsets the per-log-dir checkpoints record (State without
// its copies). A stopped replica reports those it had when it stopped: its log is no
// longer written, and a checkpoint written after it stopped (an offline replica, a
// close that failed) must carry them rather than drop it. Once its data is deleted
// (StopForDeletion) they describe nothing; the owner no longer checkpoints it.
func (p *Partition) CheckpointOffsets() CloseOffsets {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.checkpointOffsetsLocked()
}

// checkpointOffsetsLocked is CheckpointOffsets. Callers hold mu.
func (p *Partition) checkpointOffsetsLocked() CloseOffsets {
	return CloseOffsets{HighWatermark: p.highWatermark, RecoveryPoint: p.log.RecoveryPoint(), LogStartOffset: p.log.LogStartOffset()}
}
