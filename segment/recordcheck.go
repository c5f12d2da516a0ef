package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// RecordsSummary is what CheckRecords learned walking a batch's records.
type RecordsSummary struct {
	// MaxTimestamp is the largest record timestamp (baseTimestamp + timestampDelta).
	MaxTimestamp int64
	// Bytes is the size of the records section, decompressed.
	Bytes int64
	// NullKeys counts records without a key (a compacted topic refuses them).
	NullKeys int32
	// NullKeyIndexes are the indexes in the batch of the first records without a key (at
	// most MaxNullKeyIndexes), for KIP-467's per-record errors; nil when none.
	NullKeyIndexes []int32
}

// MaxNullKeyIndexes bounds RecordsSummary.NullKeyIndexes (a batch may hold millions of
// records; the errors of the first thousand tell the producer enough).
const MaxNullKeyIndexes = 1000

// MinRecordsScratch is the smallest scratch buffer CheckRecords accepts for a compressed
// batch: room for the longest varint a record field may hold, several times over.
const MinRecordsScratch = 64

// CheckRecords walks every record of the v2 batch b, which ValidateBatch accepted, and
// checks each against the batch and the bytes actually present, in one pass and
// without allocating per record: the record's length varint, its attributes byte, its
// timestamp delta, an offset delta equal to its index (0, 1, 2, ... up to
// lastOffsetDelta, so exactly recordCount records), key and value lengths of -1 (null)
// or within the record, a header count that fits the record, header keys that are not
// null and header values of -1 or within the record, and a length that the fields fill
// exactly. Nothing may follow the last record. A bad record is ErrInvalidRecord, naming
// the record's index.
//
// For an uncompressed batch, decompressed is nil and the records are read in place. For
// a compressed one, decompressed streams the records section (b[BatchHeaderSize:])
// through the batch's codec; the walk reads it into scratch (at least
// MinRecordsScratch bytes) a buffer at a time and never holds the whole section. It
// reads at most limit+1 decompressed bytes: a section larger than limit, or a record
// whose length would take it past limit, is ErrRecordsTooLarge without decompressing
// the rest. An error from decompressed is ErrUndecodableRecords unless it wraps
// ErrRecordsTooLarge; the stream is read to its end, so a codec's trailing checksum is
// checked too.
func CheckRecords(b []byte, decompressed io.Reader, limit int64, scratch []byte) (RecordsSummary, error) {
	h, err := ParseBatchHeader(b)
	if err != nil {
		return RecordsSummary{}, err
	}
	if len(b) < BatchHeaderSize || h.Size() != int64(len(b)) {
		return RecordsSummary{}, fmt.Errorf("%w: batchLength %d does not match the %d bytes given", ErrInvalidBatch, h.BatchLength, len(b))
	}
	s := recordStream{limit: limit}
	if decompressed == nil {
		s.buf = b[BatchHeaderSize:]
		s.end = len(s.buf)
		s.eof = true
	} else {
		if len(scratch) < MinRecordsScratch {
			return RecordsSummary{}, fmt.Errorf("segment: CheckRecords needs a scratch buffer of at least %d bytes", MinRecordsScratch)
		}
		s.buf, s.src = scratch, decompressed
	}
	sum := RecordsSummary{MaxTimestamp: h.BaseTimestamp}
	for i := int32(0); i < h.RecordCount; i++ {
		ts, err := s.record(i)
		if err != nil {
			return sum, err
		}
		sum.MaxTimestamp = max(sum.MaxTimestamp, h.BaseTimestamp+ts)
	}
	more := s.available(1)
	if s.err != nil {
		return sum, s.err
	}
	if more {
		return sum, fmt.Errorf("%w: bytes follow record %d, the last of %d", ErrInvalidRecord, h.RecordCount-1, h.RecordCount)
	}
	sum.Bytes = s.consumed
	sum.NullKeys, sum.NullKeyIndexes = s.nullKeys, s.nullAt
	return sum, nil
}

// recordStream is the records section as the walk sees it: buf[pos:end] decoded and not
// yet consumed, refilled from src when src is set.
type recordStream struct {
	buf      []byte
	pos, end int
	src      io.Reader
	eof      bool  // src is exhausted (always, without src)
	err      error // sticky: a decoding error from src, or the limit
	consumed int64 // bytes the walk has consumed
	pulled   int64 // bytes read from src
	limit    int64
	lastNull bool    // the last field read was null
	nullKeys int32   // records with a null key
	nullAt   []int32 // indexes of the first records with a null key
}

// available reports whether at least n (≤ MinRecordsScratch) bytes are buffered, reading
// from src as needed.
func (s *recordStream) available(n int) bool {
	for s.end-s.pos < n && !s.eof && s.err == nil {
		if s.pos > 0 {
			s.end = copy(s.buf, s.buf[s.pos:s.end])
			s.pos = 0
		}
		room := int64(len(s.buf) - s.end)
		if left := s.limit + 1 - s.pulled; left < room {
			room = left
		}
		if room <= 0 {
			s.err = fmt.Errorf("%w: the records decompress past the %d-byte limit", ErrRecordsTooLarge, s.limit)
			break
		}
		m, err := s.src.Read(s.buf[s.end : s.end+int(room)])
		s.end += m
		s.pulled += int64(m)
		switch {
		case errors.Is(err, io.EOF):
			s.eof = true
		case errors.Is(err, ErrRecordsTooLarge):
			s.err = err
		case err != nil:
			s.err = fmt.Errorf("%w: %v", ErrUndecodableRecords, err)
		}
		if s.pulled > s.limit {
			s.err = fmt.Errorf("%w: the records decompress past the %d-byte limit", ErrRecordsTooLarge, s.limit)
		}
	}
	return s.end-s.pos >= n
}

// short is the error for a record cut off: the stream's own error when it has one.
func (s *recordStream) short(i int32, what string) error {
	if s.err != nil {
		return s.err
	}
	return fmt.Errorf("%w: record %d is cut short in its %s", ErrInvalidRecord, i, what)
}

// varint decodes a zigzag varint of at most maxLen bytes.
func (s *recordStream) varint(i int32, what string, maxLen int) (int64, error) {
	if s.pos < s.end && s.buf[s.pos] < 0x80 { // one byte: most lengths and deltas
		u := uint64(s.buf[s.pos])
		s.pos++
		s.consumed++
		return int64(u>>1) ^ -int64(u&1), nil
	}
	if s.end-s.pos < binary.MaxVarintLen64 {
		s.available(binary.MaxVarintLen64)
	}
	v, n := binary.Varint(s.buf[s.pos:s.end])
	if n == 0 {
		return 0, s.short(i, what)
	}
	if n < 0 || n > maxLen {
		return 0, fmt.Errorf("%w: record %d has an overlong %s varint", ErrInvalidRecord, i, what)
	}
	s.pos += n
	s.consumed += int64(n)
	return v, nil
}

// varint32 decodes a zigzag varint that must fit an int32.
func (s *recordStream) varint32(i int32, what string) (int32, error) {
	v, err := s.varint(i, what, 5)
	if err == nil && (v < -1<<31 || v > 1<<31-1) {
		err = fmt.Errorf("%w: record %d has a %s of %d", ErrInvalidRecord, i, what, v)
	}
	return int32(v), err
}

// skip consumes n bytes.
func (s *recordStream) skip(i int32, what string, n int64) error {
	for n > 0 {
		if s.pos == s.end && !s.available(1) {
			return s.short(i, what)
		}
		k := min(n, int64(s.end-s.pos))
		s.pos += int(k)
		s.consumed += k
		n -= k
	}
	return nil
}

// field reads a length-prefixed field (key, value, header key or value) of record i,
// which ends at recordEnd: a length of -1 (when nullable) or 0..bytes left.
func (s *recordStream) field(i int32, what, lengthWhat string, nullable bool, recordEnd int64) error {
	s.lastNull = false
	n, err := s.varint32(i, lengthWhat)
	switch {
	case err != nil:
		return err
	case n == -1 && nullable:
		s.lastNull = true
		return nil
	case n < 0:
		return fmt.Errorf("%w: record %d has a %s length of %d", ErrInvalidRecord, i, what, n)
	case int64(n) > recordEnd-s.consumed:
		return fmt.Errorf("%w: record %d has a %d-byte %s but only %d bytes of the record are left", ErrInvalidRecord, i, n, what, max(recordEnd-s.consumed, 0))
	}
	return s.skip(i, what, int64(n))
}

// record checks record i and returns its timestamp delta.
func (s *recordStream) record(i int32) (int64, error) {
	length, err := s.varint32(i, "length")
	if err != nil {
		return 0, err
	}
	if length < 0 {
		return 0, fmt.Errorf("%w: record %d has a negative length %d", ErrInvalidRecord, i, length)
	}
	if s.src == nil {
		if left := s.end - s.pos; int64(length) > int64(left) {
			return 0, fmt.Errorf("%w: record %d claims %d bytes but only %d are left in the batch", ErrInvalidRecord, i, length, left)
		}
	} else if s.consumed+int64(length) > s.limit {
		return 0, fmt.Errorf("%w: record %d claims %d bytes, past the %d-byte decompression limit", ErrRecordsTooLarge, i, length, s.limit)
	}
	start := s.consumed
	end := start + int64(length)
	if !s.available(1) {
		return 0, s.short(i, "attributes")
	}
	s.pos++ // attributes: unused in v2, any value accepted (as Kafka does)
	s.consumed++
	tsDelta, err := s.varint(i, "timestamp delta", binary.MaxVarintLen64)
	if err != nil {
		return 0, err
	}
	offsetDelta, err := s.varint32(i, "offset delta")
	if err != nil {
		return 0, err
	}
	if offsetDelta != i {
		return 0, fmt.Errorf("%w: record %d has offset delta %d, want %d", ErrInvalidRecord, i, offsetDelta, i)
	}
	if s.consumed > end {
		return 0, fmt.Errorf("%w: record %d: its fields run past its %d-byte length", ErrInvalidRecord, i, length)
	}
	err = s.field(i, "key", "key length", true, end)
	if s.lastNull {
		s.nullKeys++
		if len(s.nullAt) < MaxNullKeyIndexes {
			s.nullAt = append(s.nullAt, i)
		}
	}
	if err != nil {
		return 0, err
	}
	if err := s.field(i, "value", "value length", true, end); err != nil {
		return 0, err
	}
	headers, err := s.varint32(i, "header count")
	if err != nil {
		return 0, err
	}
	// A header takes at least two bytes (two lengths).
	if headers < 0 || int64(headers) > (end-s.consumed)/2 {
		return 0, fmt.Errorf("%w: record %d has a header count of %d, which its remaining %d bytes cannot hold", ErrInvalidRecord, i, headers, max(end-s.consumed, 0))
	}
	for j := int32(0); j < headers; j++ {
		if err := s.field(i, "header key", "header key length", false, end); err != nil {
			return 0, err
		}
		if err := s.field(i, "header value", "header value length", true, end); err != nil {
			return 0, err
		}
	}
	if s.consumed != end {
		return 0, fmt.Errorf("%w: record %d's fields take %d bytes, its length says %d", ErrInvalidRecord, i, s.consumed-start, length)
	}
	return tsDelta, nil
}
