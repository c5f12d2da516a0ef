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

// EncodeBatch builds one uncompressed RecordBatch v2 holding records, with base offset
// 0 (the leader stamps the real one), no producer id, and timestamps at now, as Kafka's
// coordinators write them.
func EncodeBatch(records []Record, now time.Time) []byte {
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
	out := batch.AppendTo(nil)
	binary.BigEndian.PutUint32(out[batchLengthOffset:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[batchCRCOffset:], segment.CRC32C(out[batchAttributesOffset:]))
	return out
}

// errUnsupportedBatch is a batch the runtime cannot replay (compressed).
var errUnsupportedBatch = errors.New("coordinator: compressed batches are not supported")

// decodeBatches calls fn for every record of the data batches in buf (whole RecordBatch
// v2 batches as a read returns them, headers parsed by segment.ParseBatchHeader, records
// by kmsg); control batches are skipped. It returns the offset after the last whole
// batch.
func decodeBatches(buf []byte, fn func(offset int64, key, value []byte)) (next int64, err error) {
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
			continue
		}
		if h.Codec() != 0 {
			return next, errUnsupportedBatch
		}
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
			fn(h.BaseOffset+int64(r.OffsetDelta), r.Key, r.Value)
		}
	}
	return next, nil
}
