package tiered

import (
	"cmp"
	"context"
	"slices"

	"github.com/petrel-broker/petrel/metadata"
)

// RemoteLogMetadataManager is Kafka's RemoteLogMetadataManager (KIP-405): where the
// cluster records what is in remote storage. Petrel keeps it in the Raft metadata
// (DESIGN.md "Tiered storage"): the writes go to the controller, which accepts them only
// from the partition's leader at its current leader epoch (leaderEpoch, which Kafka's
// interface does not carry: its topic is fenced on the consumer side); the reads are of
// this broker's metadata image. Safe for concurrent use.
type RemoteLogMetadataManager interface {
	// AddRemoteLogSegmentMetadata records md, in COPY_SEGMENT_STARTED, written by the
	// partition's leader in leaderEpoch; it returns once the record is committed.
	AddRemoteLogSegmentMetadata(ctx context.Context, md *RemoteLogSegmentMetadata, leaderEpoch int32) error
	// UpdateRemoteLogSegmentMetadata records a segment's next state (leaderEpoch -1 for
	// a deleted topic's segment).
	UpdateRemoteLogSegmentMetadata(ctx context.Context, u RemoteLogSegmentMetadataUpdate, leaderEpoch int32) error
	// RemoteLogSegmentMetadata returns the copied segment holding offset written in
	// epochForOffset, if any.
	RemoteLogSegmentMetadata(tp TopicIDPartition, epochForOffset int32, offset int64) (*RemoteLogSegmentMetadata, bool)
	// ListRemoteLogSegments returns the partition's remote segments in every state,
	// ascending start offset.
	ListRemoteLogSegments(tp TopicIDPartition) []*RemoteLogSegmentMetadata
	// HighestOffsetForEpoch returns the highest offset of leaderEpoch in the copied
	// segments, if any.
	HighestOffsetForEpoch(tp TopicIDPartition, leaderEpoch int32) (int64, bool)
}

// RemoteLogSegmentMetadataUpdate is Kafka's RemoteLogSegmentMetadataUpdate: a segment's
// next state.
type RemoteLogSegmentMetadataUpdate struct {
	SegmentID        RemoteLogSegmentID
	EventTimestampMs int64
	CustomMetadata   []byte // with COPY_SEGMENT_FINISHED; nil when none
	State            RemoteLogSegmentState
	BrokerID         int32
}

// Update returns the update moving md to state at nowMs, by brokerID.
func (m *RemoteLogSegmentMetadata) Update(state RemoteLogSegmentState, brokerID int32, nowMs int64) RemoteLogSegmentMetadataUpdate {
	return RemoteLogSegmentMetadataUpdate{SegmentID: m.SegmentID, EventTimestampMs: nowMs, State: state, BrokerID: brokerID}
}

// AddRecord is the metadata record of md's COPY_SEGMENT_STARTED, at leaderEpoch.
func AddRecord(md *RemoteLogSegmentMetadata, leaderEpoch int32) metadata.RemoteLogSegmentRecord {
	tp := md.SegmentID.TopicIDPartition
	s := metadata.RemoteLogSegment{
		ID: md.SegmentID.ID, StartOffset: md.StartOffset, EndOffset: md.EndOffset,
		MaxTimestampMs: md.MaxTimestampMs, SizeInBytes: md.SegmentSizeInBytes, BrokerID: md.BrokerID,
		State: metadata.RemoteLogSegmentState(md.State), TxnIdxEmpty: md.TxnIdxEmpty,
		CustomMetadata: slices.Clone(md.CustomMetadata),
	}
	for _, e := range md.SegmentLeaderEpochs {
		s.LeaderEpochs = append(s.LeaderEpochs, metadata.RemoteEpochStart{Epoch: e.Epoch, StartOffset: e.StartOffset})
	}
	return metadata.RemoteLogSegmentRecord{TopicID: tp.TopicID, PartitionID: tp.Partition, LeaderEpoch: leaderEpoch, Segment: s}
}

// UpdateRecord is the metadata record of u, at leaderEpoch.
func UpdateRecord(u RemoteLogSegmentMetadataUpdate, leaderEpoch int32) metadata.RemoteLogSegmentRecord {
	tp := u.SegmentID.TopicIDPartition
	return metadata.RemoteLogSegmentRecord{TopicID: tp.TopicID, PartitionID: tp.Partition, LeaderEpoch: leaderEpoch,
		Segment: metadata.RemoteLogSegment{ID: u.SegmentID.ID, State: metadata.RemoteLogSegmentState(u.State),
			BrokerID: u.BrokerID, CustomMetadata: slices.Clone(u.CustomMetadata)}}
}

// FromImage is the metadata of the image's remote segment s of tp. The image keeps no
// event time: EventTimestampMs is 0.
func FromImage(tp TopicIDPartition, s metadata.RemoteLogSegment) *RemoteLogSegmentMetadata {
	md := &RemoteLogSegmentMetadata{
		SegmentID:   RemoteLogSegmentID{TopicIDPartition: tp, ID: s.ID},
		StartOffset: s.StartOffset, EndOffset: s.EndOffset, MaxTimestampMs: s.MaxTimestampMs,
		BrokerID: s.BrokerID, SegmentSizeInBytes: s.SizeInBytes, State: RemoteLogSegmentState(s.State),
		TxnIdxEmpty: s.TxnIdxEmpty, CustomMetadata: s.CustomMetadata,
	}
	for _, e := range s.LeaderEpochs {
		md.SegmentLeaderEpochs = append(md.SegmentLeaderEpochs, EpochStart{Epoch: e.Epoch, StartOffset: e.StartOffset})
	}
	return md
}

// epochEnds calls fn with each leader epoch of md and its last offset in md.
func (m *RemoteLogSegmentMetadata) epochEnds(fn func(epoch int32, start, end int64)) {
	for i, e := range m.SegmentLeaderEpochs {
		end := m.EndOffset
		if i+1 < len(m.SegmentLeaderEpochs) {
			end = m.SegmentLeaderEpochs[i+1].StartOffset - 1
		}
		fn(e.Epoch, e.StartOffset, end)
	}
}

// SegmentFor is RemoteLogSegmentMetadata over segs (ascending start offset): the
// copied segment holding offset in epochForOffset.
func SegmentFor(segs []*RemoteLogSegmentMetadata, epochForOffset int32, offset int64) (*RemoteLogSegmentMetadata, bool) {
	for _, md := range segs {
		if md.State != CopySegmentFinished || offset < md.StartOffset || offset > md.EndOffset {
			continue
		}
		found := false
		md.epochEnds(func(epoch int32, start, end int64) {
			found = found || (epoch == epochForOffset && start <= offset && offset <= end)
		})
		if found {
			return md, true
		}
	}
	return nil, false
}

// HighestOffsetForEpoch is HighestOffsetForEpoch over segs: the highest offset of
// leaderEpoch in the copied segments.
func HighestOffsetForEpoch(segs []*RemoteLogSegmentMetadata, leaderEpoch int32) (int64, bool) {
	highest, ok := int64(-1), false
	for _, md := range segs {
		if md.State != CopySegmentFinished {
			continue
		}
		md.epochEnds(func(epoch int32, _, end int64) {
			if epoch == leaderEpoch && end > highest {
				highest, ok = end, true
			}
		})
	}
	return highest, ok
}

// HighestCopiedOffset is Kafka's RemoteLogManager.findHighestRemoteOffset over the
// partition's remote segments in rlmm (HighestCopiedOnLineage).
func HighestCopiedOffset(rlmm RemoteLogMetadataManager, tp TopicIDPartition, localEpochs []EpochStart, logEnd int64) int64 {
	return HighestCopiedOnLineage(rlmm.ListRemoteLogSegments(tp), localEpochs, logEnd)
}

// HighestCopiedOnLineage is the highest offset of a replica's own log that the copied
// segments of segs hold (Kafka's RemoteLogManager.findHighestRemoteOffset): walking the
// replica's leader epochs from the latest down, the first epoch any copied segment
// holds records of gives the answer — the end of the copied records of that epoch that
// lie within the replica's range of it and run on without a gap from the lowest of them.
// Records of an epoch past the replica's end of it (another lineage, after an unclean
// election) never count. -1 when none. localEpochs are the replica's leader-epoch cache
// entries, ascending; logEnd is its log end offset.
func HighestCopiedOnLineage(segs []*RemoteLogSegmentMetadata, localEpochs []EpochStart, logEnd int64) int64 {
	for i := len(localEpochs) - 1; i >= 0; i-- {
		start, end := localEpochs[i].StartOffset, logEnd-1
		if i+1 < len(localEpochs) {
			end = localEpochs[i+1].StartOffset - 1
		}
		if end < start {
			continue
		}
		if off, ok := copiedInEpoch(segs, localEpochs[i].Epoch, start, end); ok {
			return off
		}
	}
	return -1
}

// copiedInEpoch returns the end of the contiguous run, from its lowest offset, of the
// copied records of epoch within [start, end]; false when there are none.
func copiedInEpoch(segs []*RemoteLogSegmentMetadata, epoch int32, start, end int64) (int64, bool) {
	type span struct{ from, to int64 }
	var spans []span
	for _, md := range segs {
		if md.State != CopySegmentFinished {
			continue
		}
		md.epochEnds(func(e int32, s, t int64) {
			if e == epoch && max(s, start) <= min(t, end) {
				spans = append(spans, span{max(s, start), min(t, end)})
			}
		})
	}
	if len(spans) == 0 {
		return -1, false
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.from, b.from) })
	reach := spans[0].to
	for _, sp := range spans[1:] {
		if sp.from > reach+1 {
			break
		}
		reach = max(reach, sp.to)
	}
	return reach, true
}
