package replication

// A replica's side of tiered storage (KIP-405). The log keeps two start offsets
// (segment/tiered.go): the log start over both tiers and the local log start. The remote
// log manager (tiered/, part A of P23) reports what remote storage holds through
// SetRemoteLogState; the two seams below are what it implements for the reads that need
// remote storage: time lookups below the local log start (ListOffsets), and the state a
// follower builds when the leader's local log starts past its own.

import (
	"context"
	"errors"
	"fmt"

	"github.com/petrel-broker/petrel/segment"
)

// ErrOffsetMovedToTieredStorage is a fetch of an offset that lies in remote storage
// only: at or above the log start offset, below the local log start offset (Kafka's
// OFFSET_MOVED_TO_TIERED_STORAGE). A follower gets that code; a consumer's fetch is the
// remote read path's to serve (FetchServer.readRemote).
var ErrOffsetMovedToTieredStorage = errors.New("replication: offset moved to tiered storage")

// ErrRemoteStorageNotReady is a follower's attempt to build its state from remote
// storage when no RemoteLog is wired (Kafka's RemoteStorageException "remote log
// storage is not yet enabled"): the fetcher backs off and tries again.
var ErrRemoteStorageNotReady = errors.New("replication: remote storage is not available to build the replica's state")

// RemoteLog is what a replica asks of the remote log manager. Implementations are safe
// for concurrent use; the replica calls them without any lock held, and they may do
// network I/O bounded by ctx.
type RemoteLog interface {
	// FindOffsetByTimestamp returns the first record at or above logStartOffset whose
	// timestamp is at least ts in the partition's remote segments of the leader epoch
	// lineage epochs (Kafka's RemoteLogManager.findOffsetByTimestamp); ok is false when
	// the remote segments hold none.
	FindOffsetByTimestamp(ctx context.Context, topic string, partition int32, ts, logStartOffset int64, epochs []segment.EpochEntry) (found segment.TimestampOffset, ok bool, err error)
	// FetchRemoteLogAuxState returns what a follower needs to start its local log past
	// the remote segment of leaderEpoch that holds offset (the leader's local log start
	// minus one): Kafka's ReplicaFetcherTierStateMachine reads the segment's
	// leader-epoch checkpoint and producer snapshot.
	FetchRemoteLogAuxState(ctx context.Context, topic string, partition int32, leaderEpoch int32, offset int64) (RemoteLogAuxState, error)
}

// RemoteLogAuxState is a follower's state as of the end of a remote segment.
type RemoteLogAuxState struct {
	// NextOffset is the remote segment's end offset plus one: the follower's local log
	// starts there.
	NextOffset int64
	// Epochs is the leader epoch cache up to NextOffset (the segment's leader-epoch
	// checkpoint).
	Epochs []segment.EpochEntry
	// ProducerSnapshot is the producer state as of NextOffset in the snapshot encoding
	// (EncodeProducerSnapshot); nil when the segment has none.
	ProducerSnapshot []byte
}

// SetRemoteLogState records what remote storage holds for this replica, as the remote
// log manager confirms it (called whenever copies finish or the remote metadata
// changes): highestCopiedOffset is the highest offset wholly copied, -1 when none; local
// segments are deleted only at or below it (taken as given: a smaller value holds local
// deletion back). remoteLogStartOffset is the first offset of the remote segments, -1
// when none; above the log start offset (remote retention deleted segments) it raises
// the log start, up to the high watermark, so it must come from settled metadata. It
// does nothing to the start offsets of a replica without remote storage, nor to a
// stopped one.
func (p *Partition) SetRemoteLogState(highestCopiedOffset, remoteLogStartOffset int64) {
	p.SetRemoteLogStateBy(func([]segment.EpochEntry, int64) (int64, int64) { return highestCopiedOffset, remoteLogStartOffset })
}

// SetRemoteLogStateBy is SetRemoteLogState with the two offsets computed by bounds from
// the replica's leader-epoch cache entries and log end offset under the replica's lock,
// so that the highest copied offset is of the lineage it bounds (a truncation lowers it
// again: segment.Log.TruncateTo).
func (p *Partition) SetRemoteLogStateBy(bounds func(epochs []segment.EpochEntry, logEnd int64) (highestCopiedOffset, remoteLogStartOffset int64)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role == Stopped {
		return
	}
	highestCopiedOffset, remoteLogStartOffset := bounds(p.log.LeaderEpochs().Entries(), p.log.LogEndOffset())
	first, start := p.log.FirstSegmentBaseOffset(), p.log.LogStartOffset()
	err := p.log.SetRemoteLogState(highestCopiedOffset, remoteLogStartOffset, p.highWatermark)
	if p.log.FirstSegmentBaseOffset() != first {
		p.trimProducerSnapshotsLocked()
	}
	if err != nil || p.log.LogStartOffset() != start {
		p.positionVersion.Add(1) // the log start moved, or the log failed
		p.notifyProgressLocked()
	}
	if err != nil {
		p.opts.Logger.Warn("applying the remote log state", "highest_copied_offset", highestCopiedOffset,
			"remote_log_start_offset", remoteLogStartOffset, "error", err)
	}
}

// TieredOffsets are a replica's offsets across the two tiers.
type TieredOffsets struct {
	// RemoteStorage is remote.storage.enable.
	RemoteStorage bool
	// LogStartOffset is the earliest offset in either tier; LocalLogStartOffset the first
	// local one.
	LogStartOffset, LocalLogStartOffset int64
	// HighestCopiedOffset is the highest offset confirmed copied, -1 when none.
	HighestCopiedOffset int64
}

// TieredOffsets returns the replica's offsets across the two tiers.
func (p *Partition) TieredOffsets() TieredOffsets {
	p.mu.Lock()
	defer p.mu.Unlock()
	return TieredOffsets{RemoteStorage: p.log.Config().RemoteStorageEnable, LogStartOffset: p.log.LogStartOffset(),
		LocalLogStartOffset: p.log.LocalLogStartOffset(), HighestCopiedOffset: p.log.HighestCopiedOffset()}
}

// checkRemoteTierLocked returns ErrOffsetMovedToTieredStorage when offset lies in remote
// storage only. Callers hold mu.
func (p *Partition) checkRemoteTierLocked(offset int64) error {
	if p.log.InRemoteTier(offset) {
		return fmt.Errorf("%w: %s-%d offset %d, local log starts at %d", ErrOffsetMovedToTieredStorage, p.Topic, p.ID, offset, p.log.LocalLogStartOffset())
	}
	return nil
}

// BuildFromRemote starts a follower's log afresh from remote storage (the leader
// answered OFFSET_MOVED_TO_TIERED_STORAGE): empty at aux.NextOffset, with the log start
// offset leaderLogStart (at most aux.NextOffset), the remote epochs and the remote
// producer state, which is also written as the snapshot at aux.NextOffset. Kafka's
// ReplicaFetcherTierStateMachine.buildRemoteLogAuxState.
func (p *Partition) BuildFromRemote(aux RemoteLogAuxState, leaderLogStart int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role != Follower {
		return ErrNotLeader
	}
	producers := NewProducerStates()
	if aux.ProducerSnapshot != nil {
		s, err := DecodeProducerSnapshot(aux.ProducerSnapshot)
		if err != nil {
			return err
		}
		producers = s
	}
	p.positionVersion.Add(1)
	if err := p.log.StartAtFromRemote(aux.NextOffset, min(max(leaderLogStart, 0), aux.NextOffset), aux.Epochs); err != nil {
		return err
	}
	remaining, err := deleteProducerSnapshots(p.log.Dir(), func(int64) bool { return true })
	p.snapshots.update(remaining, err)
	if err != nil {
		return err
	}
	p.producers, p.replay = producers, producerReplay{from: -1}
	if aux.ProducerSnapshot != nil {
		if err := writeProducerSnapshot(p.log.Dir(), aux.NextOffset, producers); err != nil {
			p.snapshots.forget()
			return err
		}
		p.snapshots.add(aux.NextOffset)
		p.replay = producerReplay{from: aux.NextOffset}
	}
	p.highWatermark, p.durableEnd = aux.NextOffset, aux.NextOffset
	p.truncations++
	p.opts.Logger.Info("built the replica's state from remote storage", "next_offset", aux.NextOffset,
		"log_start_offset", p.log.LogStartOffset(), "epochs", len(aux.Epochs))
	return nil
}
