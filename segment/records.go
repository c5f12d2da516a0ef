package segment

import (
	"encoding/binary"
	"fmt"
)

// walkRecords decodes the offset and timestamp deltas of count records in an uncompressed
// records section, calling fn for each until it returns false. Each record is: length
// varint, attributes int8, timestampDelta varlong, offsetDelta varint, then key, value and
// headers, skipped by length.
func walkRecords(b []byte, count int32, fn func(offsetDelta int32, timestampDelta int64) bool) error {
	for i := int32(0); i < count; i++ {
		length, n := binary.Varint(b)
		if n <= 0 || length < 0 || int64(len(b)-n) < length {
			return fmt.Errorf("%w: record %d has a bad length", ErrInvalidBatch, i)
		}
		rec := b[n : n+int(length)]
		b = b[n+int(length):]
		if len(rec) < 1 {
			return fmt.Errorf("%w: record %d is empty", ErrInvalidBatch, i)
		}
		rec = rec[1:] // attributes
		tsDelta, n := binary.Varint(rec)
		if n <= 0 {
			return fmt.Errorf("%w: record %d has a bad timestamp delta", ErrInvalidBatch, i)
		}
		offDelta, m := binary.Varint(rec[n:])
		if m <= 0 || offDelta < 0 || offDelta > 1<<31-1 {
			return fmt.Errorf("%w: record %d has a bad offset delta", ErrInvalidBatch, i)
		}
		if !fn(int32(offDelta), tsDelta) {
			return nil
		}
	}
	return nil
}

// RecordAtOrAfterTimestamp returns the first record of the whole stored batch b, at or
// after offset from, whose timestamp is at least ts (ListOffsets by timestamp over a
// batch read from elsewhere than a local segment: remote storage). ok is false when
// the batch holds none. A LogAppendTime batch, and a compressed one without a
// decompressor, answer its first offset at or after from with the batch's max
// timestamp, as Log.OffsetForTimestamp does.
func RecordAtOrAfterTimestamp(b []byte, ts, from int64, decompress Decompressor) (TimestampOffset, bool, error) {
	h, err := ParseBatchHeader(b)
	if err != nil {
		return TimestampOffset{}, false, err
	}
	if int64(len(b)) < h.Size() {
		return TimestampOffset{}, false, fmt.Errorf("%w: batch at offset %d cut at %d of %d bytes", ErrInvalidBatch, h.BaseOffset, len(b), h.Size())
	}
	if h.MaxTimestamp < ts || h.LastOffset() < from {
		return TimestampOffset{}, false, nil
	}
	if h.LogAppendTime() {
		return TimestampOffset{Offset: max(h.BaseOffset, from), Timestamp: h.MaxTimestamp}, true, nil
	}
	return recordInBody(h, b[BatchHeaderSize:h.Size()], from, func(rts int64) bool { return rts >= ts }, decompress)
}
