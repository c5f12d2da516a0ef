package group

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"
)

// The share group records in Kafka's bytes: keys non-flexible, values version 0 and
// flexible, ShareGroupMetadataValue's MetadataHash a plain int64.
func TestShareGroupRecordBytes(t *testing.T) {
	rec := ShareGroupRecord{Key: ShareGroupKey{Type: RecordTypeShareGroupMetadata, GroupID: "g"},
		Value: &ShareGroupMetadataValue{Epoch: 3, MetadataHash: 0x0102030405060708}}.Encode()
	if got, want := hex.EncodeToString(rec.Key), "000b000167"; got != want {
		t.Errorf("key %s, want %s", got, want)
	}
	if got, want := hex.EncodeToString(rec.Value), "0000"+"00000003"+"0102030405060708"+"00"; got != want {
		t.Errorf("value %s, want %s", got, want)
	}
	member := ShareGroupRecord{Key: ShareGroupKey{Type: RecordTypeShareGroupMemberMetadata, GroupID: "g", MemberID: "m"},
		Value: &ShareGroupMemberMetadataValue{ClientID: "c", ClientHost: "h", SubscribedTopicNames: []string{"t"}}}.Encode()
	if got, want := hex.EncodeToString(member.Key), "000a00016700016d"; got != want {
		t.Errorf("member key %s, want %s", got, want)
	}
	// RackId null (0), ClientId "c", ClientHost "h", [ "t" ], no tags.
	if got, want := hex.EncodeToString(member.Value), "0000"+"00"+"0263"+"0268"+"02"+"0274"+"00"; got != want {
		t.Errorf("member value %s, want %s", got, want)
	}
}

func TestShareGroupRecordsRoundTrip(t *testing.T) {
	id := testTopicID(7)
	tps := []ConsumerGroupTopicPartitions{{TopicID: id, Partitions: []int32{0, 2}}}
	for _, rec := range []ShareGroupRecord{
		{Key: ShareGroupKey{Type: RecordTypeShareGroupMetadata, GroupID: "g"}, Value: &ShareGroupMetadataValue{Epoch: 5, MetadataHash: -9}},
		{Key: ShareGroupKey{Type: RecordTypeShareGroupMemberMetadata, GroupID: "g", MemberID: "m"},
			Value: &ShareGroupMemberMetadataValue{RackID: optionalString("r"), ClientID: "c", ClientHost: "/h", SubscribedTopicNames: []string{"a", "b"}}},
		{Key: ShareGroupKey{Type: RecordTypeShareGroupTargetAssignmentMetadata, GroupID: "g"}, Value: &ShareGroupTargetAssignmentMetadataValue{AssignmentEpoch: 4}},
		{Key: ShareGroupKey{Type: RecordTypeShareGroupTargetAssignmentMember, GroupID: "g", MemberID: "m"}, Value: &ShareGroupTargetAssignmentMemberValue{TopicPartitions: tps}},
		{Key: ShareGroupKey{Type: RecordTypeShareGroupCurrentMemberAssignment, GroupID: "g", MemberID: "m"},
			Value: &ShareGroupCurrentMemberAssignmentValue{MemberEpoch: 4, PreviousMemberEpoch: 3, AssignedPartitions: tps}},
		{Key: ShareGroupKey{Type: RecordTypeShareGroupStatePartitionMetadata, GroupID: "g"}, Value: &ShareGroupStatePartitionMetadataValue{
			InitializingTopics: []ShareTopicPartitionsInfo{{TopicID: id, TopicName: "a", Partitions: []int32{1}}},
			InitializedTopics:  []ShareTopicPartitionsInfo{{TopicID: testTopicID(8), TopicName: "b", Partitions: []int32{0, 1}}},
			DeletingTopics:     []ShareTopicInfo{{TopicID: testTopicID(9), TopicName: "c"}}}},
		{Key: ShareGroupKey{Type: RecordTypeShareGroupCurrentMemberAssignment, GroupID: "g", MemberID: "m"}}, // tombstone
	} {
		enc := rec.Encode()
		got, ok, err := DecodeShareGroupRecord(enc.Key, enc.Value)
		if !ok || err != nil || !reflect.DeepEqual(got, rec) {
			t.Errorf("type %d: decoded %+v %v %v, want %+v", rec.Key.Type, got, ok, err, rec)
		}
		if _, ok, _ := DecodeConsumerGroupRecord(enc.Key, enc.Value); ok {
			t.Errorf("type %d decodes as a consumer group record", rec.Key.Type)
		}
	}
	consumer := ConsumerGroupRecord{Key: ConsumerGroupKey{Type: RecordTypeConsumerGroupMetadata, GroupID: "g"}, Value: &ConsumerGroupMetadataValue{Epoch: 1}}.Encode()
	if _, ok, err := DecodeShareGroupRecord(consumer.Key, consumer.Value); ok || err != nil {
		t.Errorf("a consumer group record decodes as a share one: %v %v", ok, err)
	}
	// Kafka 4.0's ShareGroupPartitionMetadata (type 9) is read and skipped.
	old := append([]byte{0, 9}, []byte{0, 1, 'g'}...)
	if rec, ok, err := DecodeShareGroupRecord(old, []byte{0, 0, 1, 0}); !ok || err != nil || rec.Value != nil {
		t.Errorf("type 9: %+v %v %v", rec, ok, err)
	}
	s := NewShard(testConfig())
	if err := s.Replay(old, []byte{0, 0, 1, 0}); err != nil || len(s.ShareGroupIDs()) != 0 {
		t.Errorf("replay of type 9: %v %v", err, s.ShareGroupIDs())
	}
	bad := ShareGroupRecord{Key: ShareGroupKey{Type: RecordTypeShareGroupMetadata, GroupID: "g"}, Value: &ShareGroupMetadataValue{}}.Encode()
	bad.Value[1] = 1 // version 1
	if _, _, err := DecodeShareGroupRecord(bad.Key, bad.Value); !errors.Is(err, ErrCorruptRecord) {
		t.Errorf("value version 1: %v", err)
	}
}

// FuzzDecodeShareGroupRecord: any bytes decode without panicking, and what decodes
// encodes back to bytes that decode to the same record.
func FuzzDecodeShareGroupRecord(f *testing.F) {
	for _, rec := range []ShareGroupRecord{
		{Key: ShareGroupKey{Type: RecordTypeShareGroupMetadata, GroupID: "g"}, Value: &ShareGroupMetadataValue{Epoch: 5}},
		{Key: ShareGroupKey{Type: RecordTypeShareGroupStatePartitionMetadata, GroupID: "g"}, Value: &ShareGroupStatePartitionMetadataValue{
			InitializedTopics: []ShareTopicPartitionsInfo{{TopicName: "b", Partitions: []int32{0, 1}}}}},
		{Key: ShareGroupKey{Type: RecordTypeShareGroupMemberMetadata, GroupID: "g", MemberID: "m"},
			Value: &ShareGroupMemberMetadataValue{ClientID: "c", SubscribedTopicNames: []string{"a"}}},
	} {
		enc := rec.Encode()
		f.Add(enc.Key, enc.Value)
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		rec, ok, err := DecodeShareGroupRecord(key, value)
		if !ok || err != nil || rec.Value == nil {
			return
		}
		enc := rec.Encode()
		again, ok, err := DecodeShareGroupRecord(enc.Key, enc.Value)
		if !ok || err != nil || !reflect.DeepEqual(again, rec) {
			t.Fatalf("re-decoded %+v (%v %v), want %+v", again, ok, err, rec)
		}
		if !bytes.Equal(enc.Key, key[:len(enc.Key)]) {
			t.Fatalf("key re-encoded as %x from %x", enc.Key, key)
		}
	})
}
