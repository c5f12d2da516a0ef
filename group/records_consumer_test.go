package group

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// topicID1 is a topic id whose bytes are 00 01 .. 0f.
var topicID1 = [16]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}

const topicID1Hex = "000102030405060708090a0b0c0d0e0f"

func strp(s string) *string { return &s }

// consumerGroupFixtures are KIP-848 records assembled by hand from Kafka's
// ConsumerGroup*Key/Value.json: keys non-flexible, values version 0, flexible.
var consumerGroupFixtures = []struct {
	name       string
	rec        ConsumerGroupRecord
	key, value string // hex; spaces separate fields
}{
	{
		name: "group epoch",
		rec:  ConsumerGroupRecord{Key: ConsumerGroupKey{Type: 3, GroupID: "g"}, Value: &ConsumerGroupMetadataValue{Epoch: 5}},
		// int16 3 | string "g"
		key: "0003 0001 67",
		// version 0 | epoch 5 | no tagged fields
		value: "0000 00000005 00",
	},
	{
		name: "group epoch with metadata hash",
		rec: ConsumerGroupRecord{Key: ConsumerGroupKey{Type: 3, GroupID: "g"},
			Value: &ConsumerGroupMetadataValue{Epoch: 5, MetadataHash: 0x0102030405060708}},
		key: "0003 0001 67",
		// epoch 5 | 1 tagged field: tag 0, 8 bytes, int64
		value: "0000 00000005 01 00 08 0102030405060708",
	},
	{
		name: "partition metadata",
		rec: ConsumerGroupRecord{Key: ConsumerGroupKey{Type: 4, GroupID: "g"},
			Value: &ConsumerGroupPartitionMetadataValue{Topics: []ConsumerGroupTopicMetadata{
				{TopicID: topicID1, TopicName: "t", NumPartitions: 3,
					PartitionMetadata: []ConsumerGroupPartitionRacks{{Partition: 0, Racks: []string{"r"}}}},
			}}},
		key: "0004 0001 67",
		// topics [1]: uuid | compact "t" | int32 3 | partition metadata [1]:
		// (int32 0 | racks ["r"] | tags) | topic tags | value tags
		value: "0000 02 " + topicID1Hex + " 0274 00000003 02 00000000 02 0272 00 00 00",
	},
	{
		name: "member subscription",
		rec: ConsumerGroupRecord{Key: ConsumerGroupKey{Type: 5, GroupID: "g", MemberID: "m"},
			Value: &ConsumerGroupMemberMetadataValue{RackID: strp("r"), ClientID: "c", ClientHost: "/h",
				SubscribedTopicNames: []string{"a", "b"}, RebalanceTimeoutMs: 300000, ServerAssignor: strp("uniform")}},
		// int16 5 | "g" | "m"
		key: "0005 0001 67 0001 6d",
		// instance null | rack "r" | client "c" | host "/h" | topics ["a","b"] | regex null |
		// rebalance 300000 | assignor "uniform" | no tags
		value: "0000 00 0272 0263 032f68 03 0261 0262 00 000493e0 08756e69666f726d 00",
	},
	{
		name: "classic member subscription",
		rec: ConsumerGroupRecord{Key: ConsumerGroupKey{Type: 5, GroupID: "g", MemberID: "m"},
			Value: &ConsumerGroupMemberMetadataValue{InstanceID: strp("i"), ClientID: "c", ClientHost: "/h",
				SubscribedTopicRegex: strp("t.*"), RebalanceTimeoutMs: -1,
				ClassicMemberMetadata: &ClassicMemberMetadata{SessionTimeoutMs: 45000,
					SupportedProtocols: []ClassicProtocol{{Name: "range", Metadata: []byte{1}}}}}},
		key: "0005 0001 67 0001 6d",
		// instance "i" | rack null | "c" | "/h" | topics [] | regex "t.*" | -1 | assignor null |
		// 1 tagged field: tag 0, 16 bytes: not-null 1 | session 45000 |
		// protocols [("range", bytes 01, tags)] | struct tags
		value: "0000 0269 00 0263 032f68 01 04742e2a ffffffff 00 01 00 10 01 0000afc8 02 0672616e6765 0201 00 00",
	},
	{
		name: "target assignment epoch",
		rec: ConsumerGroupRecord{Key: ConsumerGroupKey{Type: 6, GroupID: "g"},
			Value: &ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: 7}},
		key:   "0006 0001 67",
		value: "0000 00000007 00",
	},
	{
		name: "target assignment of a member",
		rec: ConsumerGroupRecord{Key: ConsumerGroupKey{Type: 7, GroupID: "g", MemberID: "m"},
			Value: &ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: []ConsumerGroupTopicPartitions{
				{TopicID: topicID1, Partitions: []int32{0, 2}}}}},
		key: "0007 0001 67 0001 6d",
		// [1]: uuid | [0, 2] | tags | value tags
		value: "0000 02 " + topicID1Hex + " 03 00000000 00000002 00 00",
	},
	{
		name: "current member assignment",
		rec: ConsumerGroupRecord{Key: ConsumerGroupKey{Type: 8, GroupID: "g", MemberID: "m"},
			Value: &ConsumerGroupCurrentMemberAssignmentValue{MemberEpoch: 10, PreviousMemberEpoch: 9,
				State:              MemberStateUnrevokedPartitions,
				AssignedPartitions: []ConsumerGroupTopicPartitions{{TopicID: topicID1, Partitions: []int32{1}}}}},
		key: "0008 0001 67 0001 6d",
		// epoch 10 | previous 9 | int8 state 1 | assigned [1]: uuid, [1], tags | pending [] | tags
		value: "0000 0000000a 00000009 01 02 " + topicID1Hex + " 02 00000001 00 01 00",
	},
	{
		name: "resolved regular expression",
		rec: ConsumerGroupRecord{Key: ConsumerGroupKey{Type: 16, GroupID: "g", RegularExpression: "t.*"},
			Value: &ConsumerGroupRegularExpressionValue{Topics: []string{"a"}, Version: 42, Timestamp: 1000}},
		// int16 16 | "g" | "t.*"
		key: "0010 0001 67 0003 742e2a",
		// topics ["a"] | version 42 | timestamp 1000 | tags
		value: "0000 02 0261 000000000000002a 00000000000003e8 00",
	},
	{
		name: "member tombstone",
		rec:  ConsumerGroupRecord{Key: ConsumerGroupKey{Type: 8, GroupID: "g", MemberID: "m"}},
		key:  "0008 0001 67 0001 6d",
	},
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	if s == "" {
		return nil
	}
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Each record encodes to the hand-assembled bytes, and the bytes decode to the record.
func TestConsumerGroupRecordBytes(t *testing.T) {
	for _, tc := range consumerGroupFixtures {
		t.Run(tc.name, func(t *testing.T) {
			key, value := mustHex(t, tc.key), mustHex(t, tc.value)
			got := tc.rec.Encode()
			if !bytes.Equal(got.Key, key) {
				t.Errorf("key\n got %x\nwant %x", got.Key, key)
			}
			if !bytes.Equal(got.Value, value) || (got.Value == nil) != (value == nil) {
				t.Errorf("value\n got %x\nwant %x", got.Value, value)
			}
			back, ok, err := DecodeConsumerGroupRecord(key, value)
			if err != nil || !ok {
				t.Fatalf("decode: ok %v, %v", ok, err)
			}
			if !reflect.DeepEqual(back, tc.rec) {
				t.Fatalf("decoded\n got %+v\nwant %+v", back, tc.rec)
			}
		})
	}
}

// Records of other key types are left to the classic decoder; bytes that do not parse
// are ErrCorruptRecord; tagged fields newer than Kafka 4.2 are skipped.
func TestDecodeConsumerGroupRecord(t *testing.T) {
	for _, k := range []ConsumerGroupKey{{Type: 0}, {Type: 1}, {Type: 2}, {Type: 9}, {Type: 15}, {Type: 17}, {Type: -1}} {
		key := []byte{byte(uint16(k.Type) >> 8), byte(k.Type), 0, 1, 'g'}
		if _, ok, err := DecodeConsumerGroupRecord(key, []byte{0, 0}); ok || err != nil {
			t.Errorf("key type %d: ok %v, %v", k.Type, ok, err)
		}
	}
	for _, tc := range []struct {
		name, key, value string
		want             ConsumerGroupValue
	}{
		// CreationTimeMs (tag 1, KIP-1282) after the metadata hash.
		{"newer metadata tag", "0003 000167", "0000 00000005 02 00 08 0000000000000009 01 08 00000000000003e8",
			&ConsumerGroupMetadataValue{Epoch: 5, MetadataHash: 9}},
		// AssignmentTimestamp (tag 0, KIP-1263).
		{"newer assignment tag", "0006 000167", "0000 00000007 01 00 08 00000000000003e8",
			&ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: 7}},
		// AssignmentEpochs (tag 0 of TopicPartitions, KIP-1251): [3].
		{"newer partition tag", "0008 000167 00016d",
			"0000 00000001 00000000 00 02 " + topicID1Hex + " 02 00000000 01 00 05 02 00000003 01 00",
			&ConsumerGroupCurrentMemberAssignmentValue{MemberEpoch: 1,
				AssignedPartitions: []ConsumerGroupTopicPartitions{{TopicID: topicID1, Partitions: []int32{0}}}}},
		// A null ClassicMemberMetadata written as a tagged field: int8 -1.
		{"null classic metadata", "0005 000167 00016d", "0000 00 00 0263 0268 01 00 00000000 00 01 00 01 ff",
			&ConsumerGroupMemberMetadataValue{ClientID: "c", ClientHost: "h"}},
	} {
		rec, ok, err := DecodeConsumerGroupRecord(mustHex(t, tc.key), mustHex(t, tc.value))
		if !ok || err != nil || !reflect.DeepEqual(rec.Value, tc.want) {
			t.Errorf("%s: %+v ok %v, %v", tc.name, rec.Value, ok, err)
		}
	}
	for _, tc := range []struct{ name, key, value string }{
		{"short key", "0005 000167", ""},
		{"null group", "0003 ffff", ""},
		{"value version 1", "0003 000167", "0001 00000005 00"},
		{"negative version", "0003 000167", "ffff 00000005 00"},
		{"short value", "0003 000167", "0000 000000"},
		{"missing tags", "0006 000167", "0000 00000007"},
		{"null client id", "0005 000167 00016d", "0000 00 00 00 0168 01 00 00000000 00 00"},
		{"array past the end", "0010 000167 000174", "0000 7f"},
		{"tag past the end", "0003 000167", "0000 00000005 01 00 09 0000000000000009"},
		{"short tagged hash", "0003 000167", "0000 00000005 01 00 02 0000"},
		{"string over 32767 bytes", "0010 000167 000174", "0000 02 818002" + strings.Repeat("61", 32768) + " 0000000000000000 0000000000000000 00"},
		{"instance id over 32767 bytes", "0005 000167 00016d", "0000 818002" + strings.Repeat("61", 32768) + " 00 0263 0268 01 00 00000000 00 00"},
		{"one-byte key", "00", ""},
		{"bad classic metadata", "0005 000167 00016d", "0000 00 00 0263 0268 01 00 00000000 00 01 00 02 01 00"},
	} {
		_, _, err := DecodeConsumerGroupRecord(mustHex(t, tc.key), mustHex(t, tc.value))
		if !errors.Is(err, ErrCorruptRecord) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// The classic replay still skips KIP-848 records (until the consumer group state
// machine replays them).
func TestReplaySkipsConsumerGroupRecords(t *testing.T) {
	s := NewShard(testConfig())
	for _, tc := range consumerGroupFixtures {
		if err := s.Replay(mustHex(t, tc.key), mustHex(t, tc.value)); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
	}
	if len(s.groups) != 0 {
		t.Fatalf("groups %v", s.groups)
	}
}

// Encoding a value under another type's key, or a key of no consumer group type, is a
// programming error.
func TestConsumerGroupRecordMisusePanics(t *testing.T) {
	for name, rec := range map[string]ConsumerGroupRecord{
		"type 6 value under a type 3 key": {Key: ConsumerGroupKey{Type: 3, GroupID: "g"}, Value: &ConsumerGroupTargetAssignmentMetadataValue{}},
		"type 2 key":                      {Key: ConsumerGroupKey{Type: 2, GroupID: "g"}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: encoded", name)
				}
			}()
			rec.Encode()
		}()
	}
}

// Decoding never panics; what decodes encodes to bytes that decode to the same record,
// and encoding is stable; a record without unknown tagged fields or trailing bytes
// re-encodes byte for byte.
func FuzzDecodeConsumerGroupRecord(f *testing.F) {
	for _, tc := range consumerGroupFixtures {
		f.Add(mustHex(f, tc.key), mustHex(f, tc.value))
	}
	f.Add(mustHex(f, "0003 000167"), mustHex(f, "0000 00000005 02 00 08 0000000000000009 01 08 00000000000003e8"))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		rec, ok, err := DecodeConsumerGroupRecord(key, value)
		if !ok || err != nil {
			return
		}
		enc := rec.Encode()
		back, ok, err := DecodeConsumerGroupRecord(enc.Key, enc.Value)
		if !ok || err != nil {
			t.Fatalf("re-decode: ok %v, %v", ok, err)
		}
		if !reflect.DeepEqual(back, rec) {
			t.Fatalf("round trip\n got %+v\nwant %+v", back, rec)
		}
		if again := back.Encode(); !bytes.Equal(again.Key, enc.Key) || !bytes.Equal(again.Value, enc.Value) {
			t.Fatalf("encoding not stable: %x/%x then %x/%x", enc.Key, enc.Value, again.Key, again.Value)
		}
		if !bytes.HasPrefix(key, enc.Key) {
			t.Fatalf("key %x re-encoded as %x", key, enc.Key)
		}
	})
}
