package group

import "fmt"

// The KIP-932 share group records of __consumer_offsets, byte for byte as Kafka 4.2's
// group coordinator writes them (group-coordinator's ShareGroup*Key/Value.json, built by
// GroupCoordinatorRecordHelpers), in the framing of records_consumer.go:
//
//	key   = int16 record type, then the key's fields, non-flexible
//	        9  ShareGroupPartitionMetadata        group (Kafka 4.0 only; skipped on read)
//	        10 ShareGroupMemberMetadata           group, member
//	        11 ShareGroupMetadata                 group
//	        12 ShareGroupTargetAssignmentMetadata group
//	        13 ShareGroupTargetAssignmentMember   group, member
//	        14 ShareGroupCurrentMemberAssignment  group, member
//	        15 ShareGroupStatePartitionMetadata   group
//	value = int16 version (0 for every type), then the flexible fields; a null value is
//	        a tombstone.
//
// Unlike ConsumerGroupMetadataValue, ShareGroupMetadataValue holds its MetadataHash as a
// plain field (share groups were a preview when KIP-1101 added it). Tagged fields newer
// than Kafka 4.2 are skipped on read.

// Record types (key versions) of the share group records, 9 to 15.
const (
	RecordTypeShareGroupPartitionMetadata int16 = 9 + iota
	RecordTypeShareGroupMemberMetadata
	RecordTypeShareGroupMetadata
	RecordTypeShareGroupTargetAssignmentMetadata
	RecordTypeShareGroupTargetAssignmentMember
	RecordTypeShareGroupCurrentMemberAssignment
	RecordTypeShareGroupStatePartitionMetadata
)

// ShareGroupKey is the key of a share group record; MemberID is part of the key for
// types 10, 13 and 14 only.
type ShareGroupKey struct {
	Type     int16
	GroupID  string
	MemberID string
}

// ShareGroupRecord is one share group record; a nil Value is a tombstone.
type ShareGroupRecord struct {
	Key   ShareGroupKey
	Value ShareGroupValue
}

// ShareGroupValue is the value of a share group record: a pointer to one of the
// ShareGroup*Value types of this file.
type ShareGroupValue interface {
	appendFields(w *writer)
}

// ShareGroupMetadataValue is the group epoch record (type 11).
type ShareGroupMetadataValue struct {
	Epoch int32
	// MetadataHash digests the subscribed topics' metadata (see ConsumerGroupEpochBumped).
	MetadataHash int64
}

func (v *ShareGroupMetadataValue) appendFields(w *writer) {
	w.int32(v.Epoch)
	w.int64(v.MetadataHash)
	w.uvarint(0)
}

// ShareGroupMemberMetadataValue is a member's metadata (type 10).
type ShareGroupMemberMetadataValue struct {
	RackID               *string
	ClientID             string
	ClientHost           string
	SubscribedTopicNames []string
}

func (v *ShareGroupMemberMetadataValue) appendFields(w *writer) {
	w.nullableString(v.RackID)
	w.string(v.ClientID)
	w.string(v.ClientHost)
	w.stringArray(v.SubscribedTopicNames)
	w.uvarint(0)
}

// ShareGroupTargetAssignmentMetadataValue is the target assignment epoch (type 12),
// in the schema of ConsumerGroupTargetAssignmentMetadataValue.
type ShareGroupTargetAssignmentMetadataValue = ConsumerGroupTargetAssignmentMetadataValue

// ShareGroupTargetAssignmentMemberValue is a member's target assignment (type 13), in
// the schema of ConsumerGroupTargetAssignmentMemberValue.
type ShareGroupTargetAssignmentMemberValue = ConsumerGroupTargetAssignmentMemberValue

// ShareGroupCurrentMemberAssignmentValue is a member's epochs and assignment (type 14);
// State is always MemberStateStable, as share members never revoke.
type ShareGroupCurrentMemberAssignmentValue struct {
	MemberEpoch         int32
	PreviousMemberEpoch int32
	State               int8
	AssignedPartitions  []ConsumerGroupTopicPartitions
}

// ShareGroupStatePartitionMetadataValue is which partitions of which topics have share
// state on the share coordinator (type 15): being initialized, initialized, being
// deleted. Each record states the whole of it.
type ShareGroupStatePartitionMetadataValue struct {
	InitializingTopics []ShareTopicPartitionsInfo
	InitializedTopics  []ShareTopicPartitionsInfo
	DeletingTopics     []ShareTopicInfo
}

// ShareTopicPartitionsInfo is partitions of one topic, by id and name.
type ShareTopicPartitionsInfo struct {
	TopicID    [16]byte
	TopicName  string
	Partitions []int32
}

// ShareTopicInfo names one topic.
type ShareTopicInfo struct {
	TopicID   [16]byte
	TopicName string
}

// shareValueType is the record type v belongs to (-1 for a value of no share record).
func shareValueType(v ShareGroupValue) int16 {
	switch v.(type) {
	case *ShareGroupMemberMetadataValue:
		return RecordTypeShareGroupMemberMetadata
	case *ShareGroupMetadataValue:
		return RecordTypeShareGroupMetadata
	case *ShareGroupTargetAssignmentMetadataValue:
		return RecordTypeShareGroupTargetAssignmentMetadata
	case *ShareGroupTargetAssignmentMemberValue:
		return RecordTypeShareGroupTargetAssignmentMember
	case *ShareGroupCurrentMemberAssignmentValue:
		return RecordTypeShareGroupCurrentMemberAssignment
	case *ShareGroupStatePartitionMetadataValue:
		return RecordTypeShareGroupStatePartitionMetadata
	}
	return -1
}

func (v *ShareGroupCurrentMemberAssignmentValue) appendFields(w *writer) {
	w.int32(v.MemberEpoch)
	w.int32(v.PreviousMemberEpoch)
	w.b = append(w.b, byte(v.State))
	w.topicPartitions(v.AssignedPartitions)
	w.uvarint(0)
}

func (v *ShareGroupStatePartitionMetadataValue) appendFields(w *writer) {
	for _, list := range [][]ShareTopicPartitionsInfo{v.InitializingTopics, v.InitializedTopics} {
		w.arrayLength(len(list))
		for _, t := range list {
			w.b = append(w.b, t.TopicID[:]...)
			w.string(t.TopicName)
			w.int32Array(t.Partitions)
			w.uvarint(0)
		}
	}
	w.arrayLength(len(v.DeletingTopics))
	for _, t := range v.DeletingTopics {
		w.b = append(w.b, t.TopicID[:]...)
		w.string(t.TopicName)
		w.uvarint(0)
	}
	w.uvarint(0)
}

func (w *writer) int32Array(ps []int32) {
	w.arrayLength(len(ps))
	for _, p := range ps {
		w.int32(p)
	}
}

// shareKeyHasMember tells, for each share group record type, whether its key holds a
// member id after the group id.
var shareKeyHasMember = map[int16]bool{
	RecordTypeShareGroupPartitionMetadata:        false,
	RecordTypeShareGroupMemberMetadata:           true,
	RecordTypeShareGroupMetadata:                 false,
	RecordTypeShareGroupTargetAssignmentMetadata: false,
	RecordTypeShareGroupTargetAssignmentMember:   true,
	RecordTypeShareGroupCurrentMemberAssignment:  true,
	RecordTypeShareGroupStatePartitionMetadata:   false,
}

// Encode returns the key's bytes. It panics on a type that is not a share group record
// type (a programming error).
func (k ShareGroupKey) Encode() []byte {
	withMember, known := shareKeyHasMember[k.Type]
	switch {
	case !known:
		panic(fmt.Sprintf("group: record type %d is not a share group record", k.Type))
	case withMember:
		return groupRecordKey(k.Type, k.GroupID, k.MemberID)
	default:
		return groupRecordKey(k.Type, k.GroupID)
	}
}

// Encode returns the record's key and value; a nil Value gives a tombstone. It panics
// when Value belongs to another record type than Key.Type.
func (r ShareGroupRecord) Encode() Record {
	if r.Value == nil {
		return Record{Key: r.Key.Encode()}
	}
	return Record{Key: r.Key.Encode(), Value: groupRecordValue(r.Key.Type, shareValueType(r.Value), r.Value)}
}

// DecodeShareGroupRecord decodes a __consumer_offsets record of a share group (key
// types 9-15); ok is false, with no error, for other key types. The deprecated type 9
// decodes with a nil Value whatever its bytes. A known key or value that does not
// parse, or a value version other than 0, is an ErrCorruptRecord.
func DecodeShareGroupRecord(key, value []byte) (rec ShareGroupRecord, ok bool, err error) {
	r := reader{b: key}
	rec.Key.Type = r.int16()
	withMember, known := shareKeyHasMember[rec.Key.Type]
	if r.err != nil || !known {
		return rec, false, r.err
	}
	rec.Key.GroupID = r.string()
	if withMember {
		rec.Key.MemberID = r.string()
	}
	if r.err != nil {
		return rec, true, r.err
	}
	if value == nil || rec.Key.Type == RecordTypeShareGroupPartitionMetadata {
		return rec, true, nil
	}
	rec.Value, err = decodeShareGroupValue(rec.Key.Type, value)
	if err != nil {
		return rec, true, fmt.Errorf("group %q record type %d: %w", rec.Key.GroupID, rec.Key.Type, err)
	}
	return rec, true, nil
}

func decodeShareGroupValue(recordType int16, value []byte) (ShareGroupValue, error) {
	r := reader{b: value}
	if version := r.int16(); r.err != nil {
		return nil, r.err
	} else if version != 0 {
		return nil, fmt.Errorf("%w: value version %d of record type %d", ErrCorruptRecord, version, recordType)
	}
	r.flexible = true
	var v ShareGroupValue
	switch recordType {
	case RecordTypeShareGroupMetadata:
		v = &ShareGroupMetadataValue{Epoch: r.int32(), MetadataHash: r.int64()}
	case RecordTypeShareGroupMemberMetadata:
		v = &ShareGroupMemberMetadataValue{RackID: r.recordNullableString(), ClientID: r.recordString(),
			ClientHost: r.recordString(), SubscribedTopicNames: r.stringArray()}
	case RecordTypeShareGroupTargetAssignmentMetadata:
		v = &ShareGroupTargetAssignmentMetadataValue{AssignmentEpoch: r.int32()}
	case RecordTypeShareGroupTargetAssignmentMember:
		v = &ShareGroupTargetAssignmentMemberValue{TopicPartitions: r.topicPartitions()}
	case RecordTypeShareGroupCurrentMemberAssignment:
		v = &ShareGroupCurrentMemberAssignmentValue{MemberEpoch: r.int32(), PreviousMemberEpoch: r.int32(),
			State: r.int8(), AssignedPartitions: r.topicPartitions()}
	case RecordTypeShareGroupStatePartitionMetadata:
		v = r.shareStatePartitionMetadata()
	}
	r.taggedFields(nil)
	if r.err != nil {
		return nil, r.err
	}
	return v, nil
}

func (r *reader) shareStatePartitionMetadata() *ShareGroupStatePartitionMetadataValue {
	v := &ShareGroupStatePartitionMetadataValue{}
	for _, list := range []*[]ShareTopicPartitionsInfo{&v.InitializingTopics, &v.InitializedTopics} {
		n := r.arrayLength()
		for i := 0; i < n && r.err == nil; i++ {
			t := ShareTopicPartitionsInfo{TopicID: r.uuid(), TopicName: r.recordString()}
			m := r.arrayLength()
			for j := 0; j < m && r.err == nil; j++ {
				t.Partitions = append(t.Partitions, r.int32())
			}
			r.taggedFields(nil)
			*list = append(*list, t)
		}
	}
	n := r.arrayLength()
	for i := 0; i < n && r.err == nil; i++ {
		t := ShareTopicInfo{TopicID: r.uuid(), TopicName: r.recordString()}
		r.taggedFields(nil)
		v.DeletingTopics = append(v.DeletingTopics, t)
	}
	return v
}
