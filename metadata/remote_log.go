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
	return CheckRemoteLogSegmentRecordOn(im, im.RemoteLogSegments(r.TopicID, r.PartitionID), r)
}

// CheckRemoteLogSegmentRecordOn is CheckRemoteLogSegmentRecord with segs as the
// partition's remote segments in place of im's (im's with earlier changes applied by
// ApplyRemoteLogSegmentTo: the controller checks a request's changes so, without a new
// image per change).
func CheckRemoteLogSegmentRecordOn(im *Image, segs []RemoteLogSegment, r RemoteLogSegmentRecord) error {
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

// remoteKey names a partition's remote segments while an entry is applied.
type remoteKey struct {
	topic     Uuid
	partition int32
}

// applyRemoteLogSegment applies r (checked again: the image is the last word). The
// first record of an entry to change a topic's remote log copies it, and the first to
// change a partition's segments copies the slice; later records of the entry change
// those copies in place, so an entry of n changes to one partition costs O(n) copies
// of its slice at most once, not n times.
func (im *Image) applyRemoteLogSegment(r RemoteLogSegmentRecord) error {
	if err := CheckRemoteLogSegmentRecord(im, r); err != nil {
		return err
	}
	rl := im.ownRemoteTopicLog(r.TopicID)
	key := remoteKey{r.TopicID, r.PartitionID}
	segs := rl.Partitions[r.PartitionID]
	if !im.remoteFresh[key] {
		segs = slices.Clone(segs)
		if im.remoteFresh == nil {
			im.remoteFresh = map[remoteKey]bool{}
		}
		im.remoteFresh[key] = true
	}
	segs = ApplyRemoteLogSegmentTo(segs, r)
	if len(segs) == 0 {
		delete(rl.Partitions, r.PartitionID)
	} else {
		rl.Partitions[r.PartitionID] = segs
	}
	if len(rl.Partitions) == 0 {
		delete(im.RemoteLogs, r.TopicID)
		delete(im.remoteTopicFresh, r.TopicID)
	}
	return nil
}

// ApplyRemoteLogSegmentTo returns a partition's remote segments segs (ascending start
// offset) with r applied, changing segs in place: the caller owns it. r must have
// passed CheckRemoteLogSegmentRecordOn against segs.
func ApplyRemoteLogSegmentTo(segs []RemoteLogSegment, r RemoteLogSegmentRecord) []RemoteLogSegment {
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
		segs = slices.Insert(segs, at, s)
	case s.State == DeleteSegmentFinished:
		segs = slices.Delete(segs, i, i+1)
	default:
		u := &segs[i]
		u.State, u.BrokerID = s.State, s.BrokerID
		if s.State == CopySegmentFinished && s.CustomMetadata != nil {
			u.CustomMetadata = slices.Clone(s.CustomMetadata)
		}
	}
	return segs
}

// removeTopicRemoteLog keeps a deleted topic's remote segments as awaiting deletion.
func (im *Image) removeTopicRemoteLog(id Uuid) {
	if im.RemoteLogs[id] != nil {
		im.ownRemoteTopicLog(id).Deleted = true
	}
}

// ownRemoteTopicLog returns this entry's own copy of topic id's remote log (a new one
// when it has none), copying it the first time the entry changes it; its Partitions
// map is the entry's own too, its slices are not (remoteFresh says which are).
func (im *Image) ownRemoteTopicLog(id Uuid) *RemoteTopicLog {
	im.ownRemoteLogs()
	if im.remoteTopicFresh[id] {
		return im.RemoteLogs[id]
	}
	var next RemoteTopicLog
	if rl := im.RemoteLogs[id]; rl != nil {
		next = *rl
		next.Partitions = maps.Clone(rl.Partitions)
	} else {
		next = RemoteTopicLog{Name: im.TopicIDs[id], Partitions: map[int32][]RemoteLogSegment{}}
	}
	im.RemoteLogs[id] = &next
	if im.remoteTopicFresh == nil {
		im.remoteTopicFresh = map[Uuid]bool{}
	}
	im.remoteTopicFresh[id] = true
	return &next
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
