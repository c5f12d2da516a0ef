package metadata

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
)

// Remote log segment metadata (KIP-405) kept in the Raft metadata rather than Kafka's
// __remote_log_metadata topic (DESIGN.md "Tiered storage"): the controller accepts a
// RemoteLogSegmentRecord only from the partition's current leader at its current
// leader epoch, and Apply checks that epoch again, so a deposed leader can never record
// a copy or a deletion.

// RemoteLogSegmentRecordType is Petrel's record of one remote segment state change.
const RemoteLogSegmentRecordType RecordType = 1001

// RemoteLogSegmentState is Kafka's RemoteLogSegmentState, with its ids.
type RemoteLogSegmentState int8

// The states a remote segment goes through, in order.
const (
	CopySegmentStarted    RemoteLogSegmentState = 0 // the copy began; the objects may be incomplete
	CopySegmentFinished   RemoteLogSegmentState = 1 // every object is in the store: readable
	DeleteSegmentStarted  RemoteLogSegmentState = 2 // deletion began; no longer read
	DeleteSegmentFinished RemoteLogSegmentState = 3 // every object is gone
)

var remoteStateNames = [...]string{"COPY_SEGMENT_STARTED", "COPY_SEGMENT_FINISHED", "DELETE_SEGMENT_STARTED", "DELETE_SEGMENT_FINISHED"}

// String is Kafka's name of the state.
func (s RemoteLogSegmentState) String() string {
	if s.Valid() {
		return remoteStateNames[s]
	}
	return fmt.Sprintf("RemoteLogSegmentState(%d)", int8(s))
}

// Valid reports whether s is one of Kafka's four states.
func (s RemoteLogSegmentState) Valid() bool {
	return s >= CopySegmentStarted && s <= DeleteSegmentFinished
}

// CanTransitionTo reports whether a segment in state s may move to next, as Kafka's
// RemoteLogSegmentState.isValidTransition: a copy finishes or is abandoned to deletion,
// a finished copy is deleted, a started deletion finishes.
func (s RemoteLogSegmentState) CanTransitionTo(next RemoteLogSegmentState) bool {
	switch s {
	case CopySegmentStarted:
		return next == CopySegmentFinished || next == DeleteSegmentStarted
	case CopySegmentFinished:
		return next == DeleteSegmentStarted
	case DeleteSegmentStarted:
		return next == DeleteSegmentFinished
	}
	return false
}

// RemoteEpochStart is one leader epoch of a remote segment with the first offset of the
// segment written in it.
type RemoteEpochStart struct {
	Epoch       int32 `json:"e"`
	StartOffset int64 `json:"o"`
}

// RemoteLogSegment is what the image keeps of one remote segment: the fields of Kafka's
// RemoteLogSegmentMetadata less the partition (the map key) and the event time, with
// short JSON names (every node holds every live remote segment, in snapshots too).
type RemoteLogSegment struct {
	// ID is the RemoteLogSegmentId's id, new for every copy.
	ID Uuid `json:"id"`
	// StartOffset and EndOffset are the segment's first and last offsets, inclusive.
	StartOffset int64 `json:"so"`
	EndOffset   int64 `json:"eo"`
	// MaxTimestampMs is the largest record timestamp in it.
	MaxTimestampMs int64 `json:"ts"`
	// SizeInBytes is the log's size.
	SizeInBytes int32 `json:"sz"`
	// BrokerID is the broker that wrote the latest state.
	BrokerID int32 `json:"b"`
	// State is the latest state, by Kafka's id.
	State RemoteLogSegmentState `json:"st"`
	// TxnIdxEmpty: copied without a transaction index (KIP-1058).
	TxnIdxEmpty bool `json:"tx,omitempty"`
	// LeaderEpochs are the segment's leader epochs, ascending.
	LeaderEpochs []RemoteEpochStart `json:"le"`
	// CustomMetadata is what the storage returned from the copy; nil when none.
	CustomMetadata []byte `json:"cm,omitempty"`
}

// RemoteTopicLog is a topic's remote segments in the image: per partition, ordered by
// start offset. After the topic's deletion it stays, Deleted, until every segment is
// reported deleted (DELETE_SEGMENT_FINISHED), so that no object leaks.
type RemoteTopicLog struct {
	// Name is the topic's name: object keys carry it, after the topic's deletion too.
	Name string `json:"name"`
	// Deleted: the topic is gone; its segments await deletion from the store.
	Deleted bool `json:"deleted,omitempty"`
	// Partitions are the remote segments by partition, ascending start offset. The
	// slices are replaced, never modified.
	Partitions map[int32][]RemoteLogSegment `json:"partitions"`
}

// RemoteLogSegmentRecord records one remote segment's new state (Petrel's; Kafka writes
// RemoteLogSegmentMetadataRecord and ...UpdateRecord to __remote_log_metadata). A
// COPY_SEGMENT_STARTED record carries the whole segment; a later one its ID, State,
// BrokerID and, for COPY_SEGMENT_FINISHED, CustomMetadata. Records for a live topic must
// carry its current leader epoch and come from its leader (BrokerID); records for a
// deleted topic's segments may only delete them.
type RemoteLogSegmentRecord struct {
	TopicID     Uuid  `json:"topicId"`
	PartitionID int32 `json:"partitionId"`
	// LeaderEpoch is the sender's leader epoch of the partition (-1 for a deleted
	// topic's segment).
	LeaderEpoch int32            `json:"leaderEpoch"`
	Segment     RemoteLogSegment `json:"segment"`
}

// Type is the record's type number.
func (RemoteLogSegmentRecord) Type() RecordType { return RemoteLogSegmentRecordType }

// Version is the record's schema version.
func (RemoteLogSegmentRecord) Version() uint16 { return 0 }

// RemoteLogSegments returns a partition's remote segments (nil when none), ascending
// start offset, in every state; the slice is shared: do not modify it.
func (im *Image) RemoteLogSegments(topicID Uuid, partition int32) []RemoteLogSegment {
	if t := im.RemoteLogs[topicID]; t != nil {
		return t.Partitions[partition]
	}
	return nil
}

// DeletedRemoteLogs returns the remote logs of deleted topics awaiting deletion, by
// topic id; the values are shared: do not modify them.
func (im *Image) DeletedRemoteLogs() map[Uuid]*RemoteTopicLog {
	var out map[Uuid]*RemoteTopicLog
	for id, t := range im.RemoteLogs {
		if t.Deleted {
			if out == nil {
				out = map[Uuid]*RemoteTopicLog{}
			}
			out[id] = t
		}
	}
	return out
}

// CheckRemoteLogSegmentRecord returns why im refuses r, or nil: an unknown partition
// (ErrUnknownPartition), a sender that is not the leader (ErrRemoteLogNotLeader) or at
// another leader epoch (ErrRemoteLogFenced), a segment started twice, unknown, or moved
// against Kafka's transitions (ErrInvalidRemoteLogTransition), a deleted topic's segment
// moved to anything but deletion. Pure; the controller and Apply share it.
func CheckRemoteLogSegmentRecord(im *Image, r RemoteLogSegmentRecord) error {
	s := r.Segment
	if !s.State.Valid() {
		return fmt.Errorf("%w: state %d", ErrInvalidRecord, int8(s.State))
	}
	rl := im.RemoteLogs[r.TopicID]
	if t := im.TopicByID(r.TopicID); t != nil {
		if r.PartitionID < 0 || int(r.PartitionID) >= len(t.Partitions) {
			return fmt.Errorf("%w: %s-%d", ErrUnknownPartition, t.Name, r.PartitionID)
		}
		p := t.Partitions[r.PartitionID]
		if p.Leader != s.BrokerID {
			return fmt.Errorf("%w: broker %d, leader of %s-%d is %d", ErrRemoteLogNotLeader, s.BrokerID, t.Name, r.PartitionID, p.Leader)
		}
		if p.LeaderEpoch != r.LeaderEpoch {
			return fmt.Errorf("%w: leader epoch %d of %s-%d is %d", ErrRemoteLogFenced, r.LeaderEpoch, t.Name, r.PartitionID, p.LeaderEpoch)
		}
	} else if rl == nil || !rl.Deleted {
		return fmt.Errorf("%w: %s-%d", ErrUnknownPartition, r.TopicID, r.PartitionID)
	} else if s.State != DeleteSegmentStarted && s.State != DeleteSegmentFinished {
		return fmt.Errorf("%w: %s of a deleted topic's segment", ErrInvalidRemoteLogTransition, s.State)
	}
	var segs []RemoteLogSegment
	if rl != nil {
		segs = rl.Partitions[r.PartitionID]
	}
	i := slices.IndexFunc(segs, func(x RemoteLogSegment) bool { return x.ID == s.ID })
	if s.State == CopySegmentStarted {
		if i >= 0 {
			return fmt.Errorf("%w: segment %s already recorded", ErrInvalidRemoteLogTransition, s.ID)
		}
		if s.StartOffset < 0 || s.EndOffset < s.StartOffset || s.SizeInBytes < 0 || len(s.LeaderEpochs) == 0 {
			return fmt.Errorf("%w: remote segment [%d, %d] of %d bytes, %d epochs", ErrInvalidRecord, s.StartOffset, s.EndOffset, s.SizeInBytes, len(s.LeaderEpochs))
		}
		return nil
	}
	if i < 0 {
		return fmt.Errorf("%w: unknown segment %s", ErrInvalidRemoteLogTransition, s.ID)
	}
	if from := segs[i].State; !from.CanTransitionTo(s.State) {
		return fmt.Errorf("%w: %s to %s", ErrInvalidRemoteLogTransition, from, s.State)
	}
	return nil
}

// applyRemoteLogSegment applies r (checked again: the image is the last word).
func (im *Image) applyRemoteLogSegment(r RemoteLogSegmentRecord) error {
	if err := CheckRemoteLogSegmentRecord(im, r); err != nil {
		return err
	}
	rl := im.RemoteLogs[r.TopicID]
	var next RemoteTopicLog
	if rl != nil {
		next = *rl
		next.Partitions = maps.Clone(rl.Partitions)
	} else {
		next = RemoteTopicLog{Name: im.TopicIDs[r.TopicID], Partitions: map[int32][]RemoteLogSegment{}}
	}
	segs := next.Partitions[r.PartitionID]
	s := r.Segment
	switch i := slices.IndexFunc(segs, func(x RemoteLogSegment) bool { return x.ID == s.ID }); {
	case s.State == CopySegmentStarted:
		s.LeaderEpochs = slices.Clone(s.LeaderEpochs)
		s.CustomMetadata = slices.Clone(s.CustomMetadata)
		at, _ := slices.BinarySearchFunc(segs, s, func(a, b RemoteLogSegment) int {
			if a.StartOffset != b.StartOffset {
				return cmp.Compare(a.StartOffset, b.StartOffset)
			}
			return 1 // after those of the same start offset: a retried copy's
		})
		segs = slices.Insert(slices.Clone(segs), at, s)
	case s.State == DeleteSegmentFinished:
		segs = slices.Delete(slices.Clone(segs), i, i+1)
	default:
		segs = slices.Clone(segs)
		u := segs[i]
		u.State, u.BrokerID = s.State, s.BrokerID
		if s.State == CopySegmentFinished && s.CustomMetadata != nil {
			u.CustomMetadata = slices.Clone(s.CustomMetadata)
		}
		segs[i] = u
	}
	if len(segs) == 0 {
		delete(next.Partitions, r.PartitionID)
	} else {
		next.Partitions[r.PartitionID] = segs
	}
	im.ownRemoteLogs()
	if len(next.Partitions) == 0 {
		delete(im.RemoteLogs, r.TopicID)
	} else {
		im.RemoteLogs[r.TopicID] = &next
	}
	return nil
}

// removeTopicRemoteLog keeps a deleted topic's remote segments as awaiting deletion.
func (im *Image) removeTopicRemoteLog(id Uuid) {
	rl := im.RemoteLogs[id]
	if rl == nil {
		return
	}
	next := *rl
	next.Deleted = true
	im.ownRemoteLogs()
	im.RemoteLogs[id] = &next
}

// ownRemoteLogs gives this entry its own copy of the RemoteLogs map, once per entry.
func (im *Image) ownRemoteLogs() {
	if im.remoteLogsOwned {
		return
	}
	im.RemoteLogs = maps.Clone(im.RemoteLogs)
	if im.RemoteLogs == nil {
		im.RemoteLogs = map[Uuid]*RemoteTopicLog{}
	}
	im.remoteLogsOwned = true
}
