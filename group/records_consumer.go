package group

import (
	"fmt"
	"math"
)

// The KIP-848 consumer group records of __consumer_offsets, byte for byte as Kafka 4.2's
// group coordinator writes them (group-coordinator's ConsumerGroup*Key/Value.json, built
// by GroupCoordinatorRecordHelpers), so that kafka-dump-log.sh --offsets-decoder and a
// Kafka coordinator loading the partition read a group Petrel wrote:
//
//	key   = int16 record type, then the key's fields, non-flexible (int16-length strings)
//	        3  ConsumerGroupMetadata             group
//	        4  ConsumerGroupPartitionMetadata    group (deprecated, see below)
//	        5  ConsumerGroupMemberMetadata       group, member
//	        6  ConsumerGroupTargetAssignmentMetadata  group
//	        7  ConsumerGroupTargetAssignmentMember    group, member
//	        8  ConsumerGroupCurrentMemberAssignment   group, member
//	        16 ConsumerGroupRegularExpression    group, regular expression
//	value = int16 version (0 for every type), then the fields, flexible: compact
//	        strings, bytes and arrays (unsigned varint length + 1, 0 for null), 16-byte
//	        uuids, and a tagged-field section after every structure. A null value is a
//	        tombstone.
//
// Since Kafka 4.1 (KIP-1101) the group's subscribed-topic metadata is a hash in
// ConsumerGroupMetadataValue (tagged field 0), and the coordinator no longer writes
// ConsumerGroupPartitionMetadataValue: it only reads it, and writes its tombstone once
// it has recomputed the hash of a group that still has one. Petrel does the same; the
// value's encoder exists for tests and tools.
//
// Tagged fields newer than Kafka 4.2 (ConsumerGroupMetadataValue's CreationTimeMs,
// ConsumerGroupTargetAssignmentMetadataValue's AssignmentTimestamp, the AssignmentEpochs
// of ConsumerGroupCurrentMemberAssignmentValue) are skipped on read, as Kafka 4.2 does.

// Record types (key versions) of the KIP-848 consumer group records.
const (
	RecordTypeConsumerGroupMetadata                 int16 = 3
	RecordTypeConsumerGroupPartitionMetadata        int16 = 4
	RecordTypeConsumerGroupMemberMetadata           int16 = 5
	RecordTypeConsumerGroupTargetAssignmentMetadata int16 = 6
	RecordTypeConsumerGroupTargetAssignmentMember   int16 = 7
	RecordTypeConsumerGroupCurrentMemberAssignment  int16 = 8
	RecordTypeConsumerGroupRegularExpression        int16 = 16
)

// consumerGroupValueVersion is the only value version of every KIP-848 record.
const consumerGroupValueVersion = 0

// Member states of ConsumerGroupCurrentMemberAssignmentValue.State (Kafka's
// org.apache.kafka.coordinator.group.modern.MemberState).
const (
	MemberStateStable               int8 = 0
	MemberStateUnrevokedPartitions  int8 = 1
	MemberStateUnreleasedPartitions int8 = 2
	MemberStateUnknown              int8 = 127
)

// ConsumerGroupKey is the key of a KIP-848 record. Type is one of the RecordType
// constants; MemberID is part of the key for types 5, 7 and 8, RegularExpression for 16
// (both are ignored for the other types).
type ConsumerGroupKey struct {
	Type              int16
	GroupID           string
	MemberID          string
	RegularExpression string
}

// ConsumerGroupValue is the value of a KIP-848 record: one of the *Value types of this
// file. The record type it belongs to is RecordType().
type ConsumerGroupValue interface {
	// RecordType is the key type the value is stored under.
	RecordType() int16
	appendFields(w *writer)
}

// ConsumerGroupRecord is one KIP-848 record; a nil Value is a tombstone.
type ConsumerGroupRecord struct {
	Key   ConsumerGroupKey
	Value ConsumerGroupValue
}

// ConsumerGroupMetadataValue is the group epoch record (type 3): Kafka's
// ConsumerGroupMetadataValue v0, as newConsumerGroupEpochRecord writes it.
type ConsumerGroupMetadataValue struct {
	// Epoch is the group epoch.
	Epoch int32
	// MetadataHash is the hash of the subscribed topics' metadata (KIP-1101, tagged
	// field 0, written when not 0).
	MetadataHash int64
}

// ConsumerGroupPartitionMetadataValue is the deprecated subscription metadata record
// (type 4): Kafka's ConsumerGroupPartitionMetadataValue v0. Kafka 4.1+ only reads it.
type ConsumerGroupPartitionMetadataValue struct {
	Topics []ConsumerGroupTopicMetadata
}

// ConsumerGroupTopicMetadata is one topic of a ConsumerGroupPartitionMetadataValue.
type ConsumerGroupTopicMetadata struct {
	TopicID       [16]byte
	TopicName     string
	NumPartitions int32
	// PartitionMetadata maps partitions to racks; unused since Kafka 4.0 (empty).
	PartitionMetadata []ConsumerGroupPartitionRacks
}

// ConsumerGroupPartitionRacks is the racks of one partition's replicas.
type ConsumerGroupPartitionRacks struct {
	Partition int32
	Racks     []string
}

// ConsumerGroupMemberMetadataValue is a member's subscription record (type 5): Kafka's
// ConsumerGroupMemberMetadataValue v0, as newConsumerGroupMemberSubscriptionRecord writes
// it (SubscribedTopicNames sorted).
type ConsumerGroupMemberMetadataValue struct {
	InstanceID           *string
	RackID               *string
	ClientID             string
	ClientHost           string
	SubscribedTopicNames []string
	SubscribedTopicRegex *string
	// RebalanceTimeoutMs is Kafka's default -1 when unknown.
	RebalanceTimeoutMs int32
	ServerAssignor     *string
	// ClassicMemberMetadata is set for a member using the classic protocol in a
	// consumer group (tagged field 0, written when not nil).
	ClassicMemberMetadata *ClassicMemberMetadata
}

// ClassicMemberMetadata is what a classic-protocol member of a consumer group joined
// with.
type ClassicMemberMetadata struct {
	SessionTimeoutMs   int32
	SupportedProtocols []ClassicProtocol
}

// ClassicProtocol is one JoinGroup protocol of a classic member.
type ClassicProtocol struct {
	Name     string
	Metadata []byte
}

// ConsumerGroupTargetAssignmentMetadataValue is the target assignment epoch record
// (type 6): Kafka's ConsumerGroupTargetAssignmentMetadataValue v0.
type ConsumerGroupTargetAssignmentMetadataValue struct {
	AssignmentEpoch int32
}

// ConsumerGroupTargetAssignmentMemberValue is a member's target assignment (type 7):
// Kafka's ConsumerGroupTargetAssignmentMemberValue v0.
type ConsumerGroupTargetAssignmentMemberValue struct {
	TopicPartitions []ConsumerGroupTopicPartitions
}

// ConsumerGroupTopicPartitions is partitions of one topic, by topic id.
type ConsumerGroupTopicPartitions struct {
	TopicID    [16]byte
	Partitions []int32
}

// ConsumerGroupCurrentMemberAssignmentValue is a member's current epoch and assignment
// (type 8): Kafka's ConsumerGroupCurrentMemberAssignmentValue v0, as
// newConsumerGroupCurrentAssignmentRecord writes it.
type ConsumerGroupCurrentMemberAssignmentValue struct {
	MemberEpoch         int32
	PreviousMemberEpoch int32
	// State is one of the MemberState constants.
	State                       int8
	AssignedPartitions          []ConsumerGroupTopicPartitions
	PartitionsPendingRevocation []ConsumerGroupTopicPartitions
}

// ConsumerGroupRegularExpressionValue is what a subscribed regular expression resolved
// to (type 16): Kafka's ConsumerGroupRegularExpressionValue v0, as
// newConsumerGroupRegularExpressionRecord writes it (Topics sorted).
type ConsumerGroupRegularExpressionValue struct {
	Topics []string
	// Version is the metadata image version the expression was resolved against.
	Version int64
	// Timestamp is when it was resolved, in milliseconds.
	Timestamp int64
}

// RecordType implements ConsumerGroupValue.
func (*ConsumerGroupMetadataValue) RecordType() int16 { return RecordTypeConsumerGroupMetadata }

// RecordType implements ConsumerGroupValue.
func (*ConsumerGroupPartitionMetadataValue) RecordType() int16 {
	return RecordTypeConsumerGroupPartitionMetadata
}

// RecordType implements ConsumerGroupValue.
func (*ConsumerGroupMemberMetadataValue) RecordType() int16 {
	return RecordTypeConsumerGroupMemberMetadata
}

// RecordType implements ConsumerGroupValue.
func (*ConsumerGroupTargetAssignmentMetadataValue) RecordType() int16 {
	return RecordTypeConsumerGroupTargetAssignmentMetadata
}

// RecordType implements ConsumerGroupValue.
func (*ConsumerGroupTargetAssignmentMemberValue) RecordType() int16 {
	return RecordTypeConsumerGroupTargetAssignmentMember
}

// RecordType implements ConsumerGroupValue.
func (*ConsumerGroupCurrentMemberAssignmentValue) RecordType() int16 {
	return RecordTypeConsumerGroupCurrentMemberAssignment
}

// RecordType implements ConsumerGroupValue.
func (*ConsumerGroupRegularExpressionValue) RecordType() int16 {
	return RecordTypeConsumerGroupRegularExpression
}

// isConsumerGroupRecordType reports whether t is a KIP-848 consumer group record type.
func isConsumerGroupRecordType(t int16) bool {
	return t >= RecordTypeConsumerGroupMetadata && t <= RecordTypeConsumerGroupCurrentMemberAssignment ||
		t == RecordTypeConsumerGroupRegularExpression
}

// keyHasMember reports whether records of type t are keyed by member as well as group.
func keyHasMember(t int16) bool {
	return t == RecordTypeConsumerGroupMemberMetadata || t == RecordTypeConsumerGroupTargetAssignmentMember ||
		t == RecordTypeConsumerGroupCurrentMemberAssignment
}

// Encode returns the key's bytes. It panics on a type that is not a consumer group
// record type or a string longer than 32767 bytes (Kafka refuses both): callers build
// keys from the constants and from ids already checked with fitsRecord.
func (k ConsumerGroupKey) Encode() []byte {
	if !isConsumerGroupRecordType(k.Type) {
		panic(fmt.Sprintf("group: record type %d is not a consumer group record", k.Type))
	}
	switch {
	case keyHasMember(k.Type):
		return groupRecordKey(k.Type, k.GroupID, k.MemberID)
	case k.Type == RecordTypeConsumerGroupRegularExpression:
		return groupRecordKey(k.Type, k.GroupID, k.RegularExpression)
	}
	return groupRecordKey(k.Type, k.GroupID)
}

// groupRecordKey is the key of a KIP-848 or KIP-932 group record: the record type,
// the group id, then the key's other strings (member id, regular expression).
func groupRecordKey(recordType int16, groupID string, more ...string) []byte {
	var w writer
	w.int16(recordType)
	w.string(groupID)
	for _, s := range more {
		w.string(s)
	}
	return w.b
}

// groupRecordValue is a version 0 value of a KIP-848 or KIP-932 group record whose
// key type is keyType and whose value belongs to valueType; it panics when they
// differ (a programming error).
func groupRecordValue(keyType, valueType int16, v interface{ appendFields(*writer) }) []byte {
	if valueType != keyType {
		panic(fmt.Sprintf("group: a type %d value under a type %d key", valueType, keyType))
	}
	w := writer{flexible: true}
	w.int16(consumerGroupValueVersion)
	v.appendFields(&w)
	return w.b
}

// EncodeConsumerGroupValue returns v's bytes: the int16 version, then the flexible
// fields. It panics on a string longer than 32767 bytes, as Kafka's writer throws.
func EncodeConsumerGroupValue(v ConsumerGroupValue) []byte {
	return groupRecordValue(v.RecordType(), v.RecordType(), v)
}

// Encode returns the record's key and value; a nil Value gives a tombstone. It panics
// when Value belongs to another record type than Key.Type (a programming error).
func (r ConsumerGroupRecord) Encode() Record {
	rec := Record{Key: r.Key.Encode()}
	if r.Value != nil {
		rec.Value = groupRecordValue(r.Key.Type, r.Value.RecordType(), r.Value)
	}
	return rec
}

func (v *ConsumerGroupMetadataValue) appendFields(w *writer) {
	w.int32(v.Epoch)
	if v.MetadataHash == 0 {
		w.uvarint(0)
		return
	}
	w.uvarint(1)
	w.uvarint(0) // tag
	w.uvarint(8) // size
	w.int64(v.MetadataHash)
}

func (v *ConsumerGroupPartitionMetadataValue) appendFields(w *writer) {
	w.arrayLength(len(v.Topics))
	for _, t := range v.Topics {
		w.b = append(w.b, t.TopicID[:]...)
		w.string(t.TopicName)
		w.int32(t.NumPartitions)
		w.arrayLength(len(t.PartitionMetadata))
		for _, p := range t.PartitionMetadata {
			w.int32(p.Partition)
			w.stringArray(p.Racks)
			w.uvarint(0)
		}
		w.uvarint(0)
	}
	w.uvarint(0)
}

func (v *ConsumerGroupMemberMetadataValue) appendFields(w *writer) {
	w.nullableString(v.InstanceID)
	w.nullableString(v.RackID)
	w.string(v.ClientID)
	w.string(v.ClientHost)
	w.stringArray(v.SubscribedTopicNames)
	w.nullableString(v.SubscribedTopicRegex)
	w.int32(v.RebalanceTimeoutMs)
	w.nullableString(v.ServerAssignor)
	c := v.ClassicMemberMetadata
	if c == nil {
		w.uvarint(0)
		return
	}
	// A nullable struct in a tagged field: int8 1 (not null) then the struct, the size
	// counting both (KAFKA-18199).
	field := writer{flexible: true}
	field.b = append(field.b, 1)
	field.int32(c.SessionTimeoutMs)
	field.arrayLength(len(c.SupportedProtocols))
	for _, p := range c.SupportedProtocols {
		field.string(p.Name)
		field.bytes(p.Metadata)
		field.uvarint(0)
	}
	field.uvarint(0)
	w.uvarint(1)
	w.uvarint(0) // tag
	w.uvarint(uint64(len(field.b)))
	w.b = append(w.b, field.b...)
}

func (v *ConsumerGroupTargetAssignmentMetadataValue) appendFields(w *writer) {
	w.int32(v.AssignmentEpoch)
	w.uvarint(0)
}

func (v *ConsumerGroupTargetAssignmentMemberValue) appendFields(w *writer) {
	w.topicPartitions(v.TopicPartitions)
	w.uvarint(0)
}

func (v *ConsumerGroupCurrentMemberAssignmentValue) appendFields(w *writer) {
	w.int32(v.MemberEpoch)
	w.int32(v.PreviousMemberEpoch)
	w.b = append(w.b, byte(v.State))
	w.topicPartitions(v.AssignedPartitions)
	w.topicPartitions(v.PartitionsPendingRevocation)
	w.uvarint(0)
}

func (v *ConsumerGroupRegularExpressionValue) appendFields(w *writer) {
	w.stringArray(v.Topics)
	w.int64(v.Version)
	w.int64(v.Timestamp)
	w.uvarint(0)
}

// topicPartitions writes a []TopicPartitions (topic id, []int32, tags).
func (w *writer) topicPartitions(tps []ConsumerGroupTopicPartitions) {
	w.arrayLength(len(tps))
	for _, tp := range tps {
		w.b = append(w.b, tp.TopicID[:]...)
		w.arrayLength(len(tp.Partitions))
		for _, p := range tp.Partitions {
			w.int32(p)
		}
		w.uvarint(0)
	}
}

func (w *writer) stringArray(ss []string) {
	w.arrayLength(len(ss))
	for _, s := range ss {
		w.string(s)
	}
}

// arrayLength writes a flexible (compact) array length; the records write no null
// arrays.
func (w *writer) arrayLength(n int) {
	if n > math.MaxInt32-1 {
		panic(fmt.Sprintf("group: a %d-element array reached a record", n))
	}
	w.uvarint(uint64(n) + 1)
}
