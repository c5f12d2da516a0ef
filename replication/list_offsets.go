package replication

// ListOffsets (key 2) as a replica answers it: -1 latest (the high watermark; under
// read_committed the last stable offset), -2 earliest (the log start offset over both
// tiers), -4 earliest local (v8+, KIP-405: the local log start offset), -5 latest tiered
// (v9+, KIP-1005: the highest offset copied to remote storage, -1 when none or without
// remote storage), -3 the record with the largest timestamp (local segments only, as
// Kafka), and T >= 0 the first record with timestamp >= T below the high watermark
// (offset -1 when there is none; with remote storage the remote segments are asked
// first, then the local log from its local start, as Kafka's fetchOffsetByTimestamp),
// each with the leader epoch it was written in, after KIP-320 fencing with the current
// leader epoch. As in Kafka, the debugging replica id -2 may ask any replica, leader or
// follower, and a broker or debugging replica id reads without isolation: latest is
// that replica's log end offset and time lookups reach it too.

import (
	"context"

	"github.com/petrel-broker/petrel/segment"
)

// DebuggingReplicaID is ListOffsets' replica id for tools that may ask any replica.
const DebuggingReplicaID = -2

// OffsetQuery is one partition of a ListOffsets request.
type OffsetQuery struct {
	// Timestamp is -1 (latest), -2 (earliest), -3 (the largest timestamp), -4 (earliest
	// local), -5 (latest tiered) or a time in milliseconds.
	Timestamp          int64
	CurrentLeaderEpoch int32
	// ReplicaID is the asker: -1 a consumer, DebuggingReplicaID a tool, else a broker.
	ReplicaID     int32
	ReadCommitted bool
}

// ListedOffset is a ListOffsets answer: Offset -1 when no record matches, Timestamp -1
// for latest and earliest, LeaderEpoch -1 when unknown.
type ListedOffset struct {
	Offset, Timestamp int64
	LeaderEpoch       int32
}

// ListOffset answers q. A new leader whose high watermark has not reached the start of
// its epoch cannot answer a consumer's latest query, nor a time query whose answer is
// not below the high watermark yet: ErrOffsetNotAvailable (Kafka's rule; before v5 the
// code is LEADER_NOT_AVAILABLE, the broker's choice).
func (p *Partition) ListOffset(q OffsetQuery) (ListedOffset, error) {
	return p.ListOffsetContext(context.Background(), q)
}

// ListOffsetContext is ListOffset with ctx bounding the remote lookup of a time query
// (ListOffsets v10's TimeoutMillis).
func (p *Partition) ListOffsetContext(ctx context.Context, q OffsetQuery) (ListedOffset, error) {
	scope := LeaderOnly
	if q.ReplicaID == DebuggingReplicaID {
		scope = AnyReplica
	}
	if err := p.CheckEpoch(q.CurrentLeaderEpoch, scope); err != nil {
		return ListedOffset{}, err
	}
	st := p.State()
	isolated := q.ReplicaID == -1 // consumers read up to the HW; brokers and tools to the LEO
	end := st.HighWatermark
	switch {
	case !isolated:
		end = st.LogEndOffset
	case q.ReadCommitted:
		end = st.LastStableOffset
	}
	notAvailable := isolated && st.HighWatermark < st.LeaderEpochStartOffset
	switch q.Timestamp {
	case -1: // latest
		if notAvailable {
			return ListedOffset{}, ErrOffsetNotAvailable
		}
		return ListedOffset{Offset: end, Timestamp: -1, LeaderEpoch: st.LeaderEpoch}, nil
	case -2: // earliest, over both tiers
		return ListedOffset{Offset: st.LogStartOffset, Timestamp: -1, LeaderEpoch: p.epochAt(st.LogStartOffset)}, nil
	}
	tiers := p.TieredOffsets()
	switch q.Timestamp {
	case -4: // earliest local (ListOffsets v8+, KIP-405): the earliest without remote storage
		return ListedOffset{Offset: tiers.LocalLogStartOffset, Timestamp: -1, LeaderEpoch: p.epochAt(tiers.LocalLogStartOffset)}, nil
	case -5: // latest tiered (v9+, KIP-1005): offset -1 when nothing is, or without remote storage
		if !tiers.RemoteStorage {
			return ListedOffset{Offset: -1, Timestamp: -1, LeaderEpoch: -1}, nil
		}
		return ListedOffset{Offset: tiers.HighestCopiedOffset, Timestamp: -1, LeaderEpoch: p.epochAt(tiers.HighestCopiedOffset)}, nil
	}
	var found segment.TimestampOffset
	var ok bool
	if q.Timestamp >= 0 && tiers.RemoteStorage && tiers.LogStartOffset < tiers.LocalLogStartOffset && p.opts.Remote != nil {
		var epochs []segment.EpochEntry
		p.WithLog(func(l *segment.Log) error { epochs = l.LeaderEpochs().Entries(); return nil })
		var err error
		// No lock is held: the remote log manager may read remote indexes.
		found, ok, err = p.opts.Remote.FindOffsetByTimestamp(ctx, p.Topic, p.ID, q.Timestamp, tiers.LogStartOffset, epochs)
		if err != nil {
			return ListedOffset{}, err
		}
	}
	// Not in remote storage (or none to ask): the local log from its local start. Without
	// a RemoteLog (remote.log.storage.system.enable=false) a time below the local log start
	// answers the first local record at or after it.
	err := p.WithLog(func(l *segment.Log) (err error) {
		if ok {
			return nil
		}
		if q.Timestamp == -3 {
			found, ok, err = l.MaxTimestampOffset()
		} else {
			found, ok, err = l.OffsetForTimestamp(q.Timestamp)
		}
		return err
	})
	if err != nil {
		return ListedOffset{}, err
	}
	if !ok || found.Offset >= end {
		if notAvailable {
			return ListedOffset{}, ErrOffsetNotAvailable
		}
		return ListedOffset{Offset: -1, Timestamp: -1, LeaderEpoch: -1}, nil
	}
	return ListedOffset{Offset: found.Offset, Timestamp: found.Timestamp, LeaderEpoch: p.epochAt(found.Offset)}, nil
}

// epochAt returns the leader epoch in which offset was written, from the epoch cache.
func (p *Partition) epochAt(offset int64) int32 {
	epoch := int32(-1)
	p.WithLog(func(l *segment.Log) error {
		for _, e := range l.LeaderEpochs().Entries() {
			if e.StartOffset <= offset {
				epoch = e.Epoch
			}
		}
		return nil
	})
	return epoch
}
