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
