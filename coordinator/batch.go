package coordinator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record is one key/value record of an internal topic; a nil Value is a tombstone.
type Record struct {
	Key, Value []byte
}

// Byte offsets in a RecordBatch v2 (segment/doc.go draws the layout).
const (
	batchLengthOffset     = 8
	batchCRCOffset        = 17
	batchAttributesOffset = 21
)

// Batch attributes of transactions (segment/doc.go).
const (
	attributeTransactional = 0x10
	attributeControl       = 0x20
)

// Control record types of a transaction marker's key.
const (
	controlTypeAbort  = 0
	controlTypeCommit = 1
)

// EncodeMarker builds a transaction marker as Kafka writes it: an uncompressed
// RecordBatch v2 with the transactional and control attributes, the producer's id and
// epoch, no sequence, and one record whose key is version int16 (0) and type int16
// (0 ABORT, 1 COMMIT) and whose value is version int16 (0) and the coordinator epoch
// int32.
func EncodeMarker(producerID int64, producerEpoch int16, commit bool, coordinatorEpoch int32, now time.Time) []byte {
	key := make([]byte, 4)
	if commit {
		binary.BigEndian.PutUint16(key[2:], controlTypeCommit)
	}
	value := make([]byte, 6)
	binary.BigEndian.PutUint32(value[2:], uint32(coordinatorEpoch))
	rec := kmsg.Record{Key: key, Value: value}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	ts := now.UnixMilli()
	batch := kmsg.RecordBatch{
		Magic:          2,
		Attributes:     attributeTransactional | attributeControl,
		FirstTimestamp: ts,
		MaxTimestamp:   ts,
		ProducerID:     producerID,
		ProducerEpoch:  producerEpoch,
		FirstSequence:  -1,
		NumRecords:     1,
		Records:        rec.AppendTo(nil),
	}
	out := batch.AppendTo(nil)
	binary.BigEndian.PutUint32(out[batchLengthOffset:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[batchCRCOffset:], segment.CRC32C(out[batchAttributesOffset:]))
	return out
}

// EncodeBatch builds one uncompressed RecordBatch v2 holding records, with base offset
// 0 (the leader stamps the real one), no producer id, and timestamps at now, as Kafka's
// coordinators write them.
func EncodeBatch(records []Record, now time.Time) []byte {
	return encodeBatch(records, -1, -1, now)
}

// EncodeTransactionalBatch is EncodeBatch for a transactional write of a producer (a
// TxnOffsetCommit's offsets): the transactional attribute, the producer's id and epoch,
// and base sequence 0, as Kafka's coordinators write them.
func EncodeTransactionalBatch(records []Record, producerID int64, producerEpoch int16, now time.Time) []byte {
	return encodeBatch(records, producerID, producerEpoch, now)
}

func encodeBatch(records []Record, producerID int64, producerEpoch int16, now time.Time) []byte {
	ts := now.UnixMilli()
	var body []byte
	for i, r := range records {
		rec := kmsg.Record{OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
		probe := rec.AppendTo(nil) // Length 0 takes one byte
		rec.Length = int32(len(probe) - 1)
		body = rec.AppendTo(body)
	}
	batch := kmsg.RecordBatch{
		Magic:           2,
		LastOffsetDelta: int32(len(records) - 1),
		FirstTimestamp:  ts,
		MaxTimestamp:    ts,
		ProducerID:      -1,
		ProducerEpoch:   -1,
		FirstSequence:   -1,
		NumRecords:      int32(len(records)),
		Records:         body,
	}
	if producerID >= 0 {
		batch.Attributes = attributeTransactional
		batch.ProducerID, batch.ProducerEpoch, batch.FirstSequence = producerID, producerEpoch, 0
	}
	out := batch.AppendTo(nil)
	binary.BigEndian.PutUint32(out[batchLengthOffset:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[batchCRCOffset:], segment.CRC32C(out[batchAttributesOffset:]))
	return out
}

// errUnsupportedBatch is a batch the runtime cannot replay (compressed).
var errUnsupportedBatch = errors.New("coordinator: compressed batches are not supported")

// BatchInfo describes the batch a replayed record came from.
type BatchInfo struct {
	// ProducerID is the batch's producer, -1 for a coordinator's own writes.
	ProducerID    int64
	ProducerEpoch int16
	// Transactional says the records belong to the producer's transaction: they take
	// effect only when its COMMIT marker follows (dropped on ABORT).
	Transactional bool
}

// Marker is a transaction marker (control batch) read from the log.
type Marker struct {
	Offset        int64
	ProducerID    int64
	ProducerEpoch int16
	Commit        bool
}

// decodeBatches calls fn for every record of the data batches in buf (whole RecordBatch
// v2 batches as a read returns them, headers parsed by segment.ParseBatchHeader, records
// by kmsg) and marker for every transaction marker (control batches of other types are
// skipped). It returns the offset after the last whole batch.
func decodeBatches(buf []byte, fn func(offset int64, batch BatchInfo, key, value []byte), marker func(Marker)) (next int64, err error) {
	next = -1
	for len(buf) > 0 {
		h, err := segment.ParseBatchHeader(buf)
		if err != nil {
			return next, fmt.Errorf("coordinator: %w", err)
		}
		if h.Size() > int64(len(buf)) {
			return next, fmt.Errorf("coordinator: batch of %d bytes in %d", h.Size(), len(buf))
		}
		recs := buf[segment.BatchHeaderSize:h.Size()]
		buf = buf[h.Size():]
		next = h.NextOffset()
		if h.Control() {
			if h.ControlType == controlTypeAbort || h.ControlType == controlTypeCommit {
				marker(Marker{Offset: h.BaseOffset, ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch,
					Commit: h.ControlType == controlTypeCommit})
			}
			continue
		}
		if h.Codec() != 0 {
			return next, errUnsupportedBatch
		}
		info := BatchInfo{ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, Transactional: h.Transactional()}
		for i := int32(0); i < h.RecordCount; i++ {
			length, n := binary.Varint(recs)
			if n <= 0 || length < 0 || int(length) > len(recs)-n {
				return next, fmt.Errorf("coordinator: record %d of the batch at %d is torn", i, h.BaseOffset)
			}
			var r kmsg.Record
			if err := r.ReadFrom(recs[:n+int(length)]); err != nil {
				return next, fmt.Errorf("coordinator: record %d of the batch at %d: %w", i, h.BaseOffset, err)
			}
			recs = recs[n+int(length):]
			fn(h.BaseOffset+int64(r.OffsetDelta), info, r.Key, r.Value)
		}
	}
	return next, nil
}
