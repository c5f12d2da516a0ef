package replication

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/petrel-broker/petrel/segment"
)

// The partition's producer state (idempotent producers) lives in Partition.producers,
// guarded by Partition.mu together with the log, so that a leader checks a batch and
// appends it in one step: pipelined batches of one producer are checked in order, and a
// duplicate is recognised before any offset is assigned. Followers apply every batch
// they append, so a new leader knows its predecessor's batches. Snapshots
// ("<offset>.snapshot") are written at each segment roll and on clean shutdown;
// LoadProducerState, truncation and retention keep them consistent with the log.

// ProducerLoadReport says how LoadProducerState rebuilt the producer state.
type ProducerLoadReport struct {
	// SnapshotOffset is the offset of the snapshot loaded, or -1 when none was.
	SnapshotOffset int64
	// FromShutdownState is set when the state came from the log's clean-shutdown
	// description (as a snapshot at the log end offset) rather than a snapshot file.
	FromShutdownState bool
	// CorruptSnapshots lists the offsets of snapshots ignored (and removed) as corrupt.
	CorruptSnapshots []int64
	// BatchesReplayed counts batch headers read from the log after the snapshot.
	BatchesReplayed int
	// Producers is the number of producers known afterwards.
	Producers int
	// Expired counts producers dropped as older than producer.id.expiration.ms.
	Expired int
}

// LoadProducerState rebuilds the producer state when the log is opened: it loads the
// newest valid snapshot at or below the log end offset (recovery already cut the log to
// its valid part; newer snapshots are deleted) and replays the batch headers from there.
// A corrupt snapshot is removed and an older one, or the log from its start, is used
// instead. Producers idle for expirationMs before nowMs are dropped (0 keeps all).
func (p *Partition) LoadProducerState(nowMs, expirationMs int64) (ProducerLoadReport, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	report, err := p.rebuildProducerStateLocked()
	if err != nil {
		return report, err
	}
	if expirationMs > 0 {
		report.Expired = p.producers.ExpireProducers(nowMs, expirationMs)
	}
	report.Producers = p.producers.Len()
	return report, nil
}

// rebuildProducerStateLocked sets the producer state from the snapshots and the log, as
// of the log end offset. Callers hold mu.
func (p *Partition) rebuildProducerStateLocked() (ProducerLoadReport, error) {
	report := ProducerLoadReport{SnapshotOffset: -1}
	p.snapshots.forget() // until the listing below is read and trimmed
	dir, leo := p.log.Dir(), p.log.LogEndOffset()
	var offsets []int64
	var err error
	if names, ok := p.log.TakeOpenListing(); ok { // just opened: Open's listing
		offsets = producerSnapshotOffsetsIn(names)
	} else if offsets, err = ProducerSnapshotOffsets(dir); err != nil { // one listing: those above the log end go
		return report, err
	}
	for len(offsets) > 0 && offsets[len(offsets)-1] > leo {
		if err := os.Remove(ProducerSnapshotPath(dir, offsets[len(offsets)-1])); err != nil && !errors.Is(err, os.ErrNotExist) {
			return report, err
		}
		offsets = offsets[:len(offsets)-1]
	}
	state, from := NewProducerStates(), p.log.LocalLogStartOffset()
	var gone []int64 // removed as corrupt, or missing
	var described *producerReplay
	if data := p.log.TakeOpenOwnerData(); data != nil {
		// Opened from its clean close's description, which kept the state as of the log
		// end: a snapshot at the log end, with nothing to replay.
		if s, r, err := describedProducerState(data, leo); err == nil {
			state, report.SnapshotOffset, from, described = s, leo, max(from, leo), &r
			report.FromShutdownState = true
		} else {
			p.opts.Logger.Warn("ignoring the producer state of the log's description; rebuilding it from snapshots and the log", "error", err)
		}
	}
	for i := len(offsets) - 1; i >= 0 && described == nil; i-- {
		s, version, err := readProducerSnapshot(dir, offsets[i])
		if errors.Is(err, os.ErrNotExist) {
			// Named by the log's clean-shutdown description but not there (removed by
			// hand): as if never listed.
			gone = append(gone, offsets[i])
			continue
		}
		if err == nil && version < txnIndexSnapshotVersion {
			// Written before .txnindex files existed: replay the whole log once so the
			// aborted transactions below it are found and indexed.
			p.opts.Logger.Info("producer state snapshot predates the transaction index; replaying the log from its start", "offset", offsets[i], "version", version)
			break
		}
		if err == nil {
			state, report.SnapshotOffset = s, offsets[i]
			from = max(from, offsets[i])
			break
		}
		if !errors.Is(err, ErrCorruptProducerSnapshot) {
			return report, err
		}
		p.opts.Logger.Warn("ignoring a corrupt producer state snapshot; rebuilding from the log", "offset", offsets[i], "error", err)
		report.CorruptSnapshots = append(report.CorruptSnapshots, offsets[i])
		gone = append(gone, offsets[i])
		if err := os.Remove(ProducerSnapshotPath(dir, offsets[i])); err != nil && !errors.Is(err, os.ErrNotExist) {
			return report, err
		}
	}
	p.snapshots.set(slices.DeleteFunc(offsets, func(off int64) bool { return slices.Contains(gone, off) }))
	// The aborted transactions are not in the snapshot: below it they come from the
	// segments' .txnindex files; from it on, the replay finds them and the indexes are
	// made to agree (those of a segment recovered after a crash may lack entries). An
	// unreadable index sends the whole rebuild to the log start.
	indexed, err := p.log.AbortedTxns()
	if errors.Is(err, segment.ErrCorruptTxnIndex) {
		p.opts.Logger.Warn("ignoring a corrupt transaction index; rebuilding the producer state from the log start", "error", err)
		state, report.SnapshotOffset, from = NewProducerStates(), -1, p.log.LocalLogStartOffset()
		described, report.FromShutdownState = nil, false // rebuilt from the log start after all
	} else if err != nil {
		return report, fmt.Errorf("replication: reading the transaction index of %s-%d: %w", p.Topic, p.ID, err)
	}
	state.aborted = nil
	for _, a := range indexed {
		if a.LastOffset < from {
			state.aborted = append(state.aborted, a)
		}
	}
	below := len(state.aborted)
	err = p.log.ScanBatchHeaders(from, func(h segment.BatchHeader) error {
		if h.BaseOffset >= from {
			state.Update(h)
			report.BatchesReplayed++
		}
		return nil
	})
	if err != nil {
		return report, fmt.Errorf("replication: rebuilding the producer state of %s-%d: %w", p.Topic, p.ID, err)
	}
	if err := p.log.RewriteAbortedTxnsFrom(from, state.aborted[below:]); err != nil {
		return report, fmt.Errorf("replication: rebuilding the transaction index of %s-%d: %w", p.Topic, p.ID, err)
	}
	p.producers = state
	p.replay = producerReplay{from: from, batches: report.BatchesReplayed}
	if described != nil {
		p.replay = *described // how the files would rebuild it: nothing was appended since
	}
	return report, nil
}

// checkProducersLocked applies the idempotent producer checks to a client's batches
// before they are appended. It returns the original batch when records is exactly one
// batch that repeats a retained one. Several batches of one producer in one append are
// checked against each other in order. Callers hold mu.
func (p *Partition) checkProducersLocked(records []byte) (*ProducerBatch, error) {
	h, err := segment.ParseBatchHeader(records)
	if err != nil {
		return nil, nil // the log refuses it
	}
	if h.Size() >= int64(len(records)) {
		return p.producers.Check(h)
	}
	pending := map[int64]*ProducerEntry{}
	for pos := 0; pos < len(records); {
		h, err := segment.ParseBatchHeader(records[pos:])
		if err != nil {
			return nil, nil
		}
		pos += int(h.Size())
		if h.ProducerID < 0 {
			continue
		}
		e, ok := pending[h.ProducerID]
		if !ok {
			e = p.producers.Entry(h.ProducerID)
		}
		dup, err := checkProducerBatch(e, h)
		if err != nil {
			return nil, err
		}
		if dup != nil {
			return nil, fmt.Errorf("%w: producer %d repeats sequence %d inside a multi-batch append", ErrOutOfOrderSequence, h.ProducerID, h.BaseSequence)
		}
		pending[h.ProducerID] = applyProducerBatch(e, h)
	}
	return nil, nil
}

// afterAppendLocked updates the producer state with appended (stamped) batches. A roll
// inside the append has already snapshotted the state as of the new segment's base
// offset (rollSnapshotter). Callers hold mu.
func (p *Partition) afterAppendLocked(records []byte) {
	n := len(p.producers.aborted)
	p.replay.batches += p.producers.UpdateAll(records)
	if added := p.producers.aborted[n:]; len(added) > 0 {
		if err := p.log.AppendAbortedTxns(added); err != nil {
			p.opts.Logger.Error("appending to the transaction index", "error", err)
		}
	}
	p.dropTxnVerificationsLocked(records)
}

// rollSnapshotter is a Partition as its log's segment.RollObserver.
type rollSnapshotter Partition

// BeforeRoll snapshots the producer state as of the new segment's base offset: the state
// of every batch below it, since the batches of the append that rolls are applied only
// after it returns (afterAppendLocked). The snapshot's contents are fsynced here and its
// name by the roll's directory fsync, so it is durable before the recovery point moves
// to that offset (Kafka takes it at every roll and flushes it with the segments and the
// directory before the recovery point moves, KAFKA-15046). A failed write fails the
// roll and the log (segment.ErrLogFailed, sticky until the replica is reopened), as an
// I/O error takes Kafka's log directory offline: the disk that refused the snapshot is
// not trusted with the next segment. Runs under mu, inside the append.
func (r *rollSnapshotter) BeforeRoll(base int64) error {
	p := (*Partition)(r)
	if err := writeProducerSnapshot(p.log.Dir(), base, p.producers); err != nil {
		p.snapshots.forget()
		return err
	}
	p.snapshots.add(base)
	p.replay = producerReplay{from: base}
	return nil
}

// afterTruncateLocked makes the producer state match a truncated log: snapshots above
// the new log end offset are deleted and the state is rebuilt (Kafka does the same on
// becoming a follower, KIP-279). When the rebuild fails the state is emptied, never
// kept: the old state lists the cut batches, and a retry of one would be answered with
// offsets that no longer exist (an acknowledged write lost). An empty state at worst
// appends a retry of a batch still in the log again; its producers are accepted as
// unknown producers (KAFKA-7190) and the next open rebuilds from snapshots and log.
// Callers hold mu.
func (p *Partition) afterTruncateLocked() error {
	if _, err := p.rebuildProducerStateLocked(); err != nil {
		p.producers, p.replay = NewProducerStates(), producerReplay{from: -1}
		p.opts.Logger.Error("rebuilding the producer state after a truncation failed; continuing with an empty state", "error", err)
		return err
	}
	return nil
}

// trimProducerSnapshotsLocked deletes the snapshots below the oldest segment after
// retention or a log start move; the in-memory state keeps its producers until they
// expire (KAFKA-7190). Callers hold mu.
func (p *Partition) trimProducerSnapshotsLocked() {
	first := p.log.FirstSegmentBaseOffset()
	p.producers.trimAborted(p.log.LogStartOffset())
	remaining, err := deleteProducerSnapshots(p.log.Dir(), func(off int64) bool { return off < first })
	p.snapshots.update(remaining, err)
	if err != nil {
		p.opts.Logger.Warn("deleting old producer state snapshots", "error", err)
	}
}

// WriteProducerSnapshot snapshots the producer state at the log end offset. Its rename
// is made durable by the directory's next fsync (a roll's); a clean close writes its
// own snapshot and fsyncs the directory itself (CloseClean).
func (p *Partition) WriteProducerSnapshot() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role == Stopped {
		return ErrPartitionStopped
	}
	_, err := p.writeProducerSnapshotLocked()
	return err
}

// writeProducerSnapshotLocked is WriteProducerSnapshot with p.mu held and p not stopped;
// written reports whether it wrote a file (its rename not yet durable: the caller
// arranges the directory fsync).
func (p *Partition) writeProducerSnapshotLocked() (written bool, err error) {
	leo := p.log.LogEndOffset()
	if leo == 0 {
		return false, nil // nothing was ever appended: no state (Kafka: lastMapOffset 0)
	}
	if _, err := os.Stat(ProducerSnapshotPath(p.log.Dir(), leo)); err == nil {
		// Taken at this offset already (Kafka skips it too): by a roll, whose directory
		// fsync made it durable, or by an earlier close, which did.
		p.snapshots.add(leo)
		return false, nil
	}
	// Recovery trusts the .txnindex files below the newest snapshot: they are durable
	// before it is written (a no-op without new aborted transactions).
	if err := p.log.SyncTxnIndex(); err != nil {
		return false, err
	}
	if err := writeProducerSnapshot(p.log.Dir(), leo, p.producers); err != nil {
		p.snapshots.forget()
		return false, err
	}
	p.snapshots.add(leo)
	p.replay = producerReplay{from: leo}
	return true, nil
}

// ExpireProducers drops producers whose last batch is expirationMs or more before nowMs
// (producer.id.expiration.ms) and returns how many.
func (p *Partition) ExpireProducers(nowMs, expirationMs int64) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expireTxnVerificationsLocked(nowMs, expirationMs)
	return p.producers.ExpireProducers(nowMs, expirationMs)
}

// Producers returns the producer state of a leader, for DescribeProducers.
func (p *Partition) Producers() ([]ProducerEntry, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.checkLeaderLocked(-1); err != nil {
		return nil, err
	}
	return p.producers.Entries(), nil
}

// EnforceRetention applies the log's retention below the high watermark and deletes
// producer snapshots below the oldest remaining segment.
func (p *Partition) EnforceRetention() (segment.RetentionResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role == Stopped {
		return segment.RetentionResult{}, ErrPartitionStopped
	}
	res, err := p.log.EnforceRetention(p.highWatermark)
	if len(res.DeletedSegments) > 0 || err != nil {
		p.positionVersion.Add(1) // the log start moved, or the log failed
	}
	if len(res.DeletedSegments) > 0 {
		p.trimProducerSnapshotsLocked()
		// The log start moved: a follower session watching this partition reads it at
		// its next fetch, so that an idle follower learns the new log start (Kafka's
		// followers learn it from every fetch answer).
		p.notifyProgressLocked()
	}
	return res, err
}
