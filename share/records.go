package share

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The __share_group_state records, byte for byte as Kafka 4.2's share coordinator
// writes them (share-coordinator's ShareSnapshotKey/Value.json and
// ShareUpdateKey/Value.json), so that kafka-dump-log.sh --share-group-state-decoder
// reads Petrel's files:
//
//	key   = int16 record type (0 ShareSnapshot, 1 ShareUpdate), then
//	        groupId string (int16 length) | topicId uuid (16 bytes) | partition int32
//	value = int16 value version (0), then the value's fields, flexible encoding
//	        (unsigned-varint lengths plus one, a tagged-field section after each
//	        structure); a null value is a tombstone
//
// ShareSnapshotValue v0:
//
//	snapshotEpoch int32 | stateEpoch int32 | leaderEpoch int32 | startOffset int64 |
//	createTimestamp int64 | writeTimestamp int64 | stateBatches compact array of
//	  firstOffset int64 | lastOffset int64 | deliveryState int8 | deliveryCount int16 |
//	  tags | tags (tag 0: deliveryCompleteCount int32, KIP-1226, omitted at -1)
//
// ShareUpdateValue v0:
//
//	snapshotEpoch int32 | leaderEpoch int32 | startOffset int64 | stateBatches (as
//	above) | tags (tag 0: deliveryCompleteCount int32, omitted at -1)
const (
	// RecordTypeShareSnapshot is the key type of a ShareSnapshot record.
	RecordTypeShareSnapshot int16 = 0
	// RecordTypeShareUpdate is the key type of a ShareUpdate record.
	RecordTypeShareUpdate int16 = 1

	valueVersion = 0
	// tagDeliveryCompleteCount is the tag of DeliveryCompleteCount in both values.
	tagDeliveryCompleteCount = 0
	// noDeliveryCompleteCount is DeliveryCompleteCount's default: not known.
	noDeliveryCompleteCount = -1
)

// Record is one __share_group_state record; a nil Value is a tombstone.
type Record struct {
	Key   []byte
	Value []byte
}

// UpdateValue is a ShareUpdateValue: state batches to merge into the snapshot of the
// same SnapshotEpoch, and the new start offset (-1: unchanged).
type UpdateValue struct {
	SnapshotEpoch         int32
	LeaderEpoch           int32
	StartOffset           int64
	DeliveryCompleteCount int32 // -1: not known
	Batches               []StateBatch
}

// enc appends Kafka's big-endian encodings.
type enc struct{ b []byte }

func (e *enc) i8(v int8)       { e.b = append(e.b, byte(v)) }
func (e *enc) i16(v int16)     { e.b = binary.BigEndian.AppendUint16(e.b, uint16(v)) }
func (e *enc) i32(v int32)     { e.b = binary.BigEndian.AppendUint32(e.b, uint32(v)) }
func (e *enc) i64(v int64)     { e.b = binary.BigEndian.AppendUint64(e.b, uint64(v)) }
func (e *enc) uvarint(v int64) { e.b = binary.AppendUvarint(e.b, uint64(v)) }

func (e *enc) key(recordType int16, k Key) {
	if len(k.GroupID) > math.MaxInt16 {
		// Unreachable: group ids that long are refused when the group is joined.
		panic(fmt.Sprintf("share: a %d-byte group id reached a record", len(k.GroupID)))
	}
	e.i16(recordType)
	e.i16(int16(len(k.GroupID)))
	e.b = append(e.b, k.GroupID...)
	e.b = append(e.b, k.TopicID[:]...)
	e.i32(k.Partition)
}

func (e *enc) batches(bs []StateBatch) {
	e.uvarint(int64(len(bs)) + 1)
	for _, b := range bs {
		e.i64(b.FirstOffset)
		e.i64(b.LastOffset)
		e.i8(int8(b.DeliveryState))
		e.i16(b.DeliveryCount)
		e.uvarint(0) // no tagged fields
	}
}

// tags writes the value's tagged-field section.
func (e *enc) tags(deliveryCompleteCount int32) {
	if deliveryCompleteCount == noDeliveryCompleteCount {
		e.uvarint(0)
		return
	}
	e.uvarint(1)
	e.uvarint(tagDeliveryCompleteCount)
	e.uvarint(4)
	e.i32(deliveryCompleteCount)
}

// EncodeSnapshot returns the ShareSnapshot record of key k holding state s.
func EncodeSnapshot(k Key, s State) Record {
	return encodeRecord(RecordTypeShareSnapshot, k, s.Batches, s.DeliveryCompleteCount, func(e *enc) {
		e.i32(s.SnapshotEpoch)
		e.i32(s.StateEpoch)
		e.i32(s.LeaderEpoch)
		e.i64(s.StartOffset)
		e.i64(s.CreateTimestampMs)
		e.i64(s.WriteTimestampMs)
	})
}

// EncodeUpdate returns the ShareUpdate record of key k holding u.
func EncodeUpdate(k Key, u UpdateValue) Record {
	return encodeRecord(RecordTypeShareUpdate, k, u.Batches, u.DeliveryCompleteCount, func(e *enc) {
		e.i32(u.SnapshotEpoch)
		e.i32(u.LeaderEpoch)
		e.i64(u.StartOffset)
	})
}

// encodeRecord writes a record: the key, then the value's version, its leading fields
// (head), its state batches and its tagged fields.
func encodeRecord(recordType int16, k Key, batches []StateBatch, deliveryCompleteCount int32, head func(*enc)) Record {
	var key, val enc
	key.key(recordType, k)
	val.i16(valueVersion)
	head(&val)
	val.batches(batches)
	val.tags(deliveryCompleteCount)
	return Record{Key: key.b, Value: val.b}
}

// Tombstone returns the record that deletes key k's state (record type
// RecordTypeShareSnapshot with a null value, as Kafka's share coordinator writes when a
// share group's offsets are deleted).
func Tombstone(k Key) Record {
	var key enc
	key.key(RecordTypeShareSnapshot, k)
	return Record{Key: key.b}
}
