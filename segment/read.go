package segment

import (
	"fmt"
	"io"
	"os"
)

// FileRange is a byte range of a segment's .log file holding whole batches. The network
// layer can send it without copying (sendfile); Bytes copies it. An empty range has a nil
// File.
type FileRange struct {
	File        *os.File
	Position    int64 // byte position in File
	Size        int64 // bytes
	FirstOffset int64 // base offset of the first batch; -1 when empty
	LastOffset  int64 // last offset of the last batch; -1 when empty
	// FallingBehind is set when the range's segment is older than the segment holding
	// the read's bound (upTo): more data below the bound lies in later segments (Kafka's
	// DelayedFetch completes such a fetch at once, whatever min_bytes says).
	FallingBehind bool

	ref *fileRef  // the segment's file reference, for Hold
	pin *rangePin // keeps File open in the Log's FileCache until Release (or Hold)
}

// Bytes reads the range into a new slice; an empty range gives an empty, non-nil slice.
func (r FileRange) Bytes() ([]byte, error) {
	b := make([]byte, r.Size)
	if r.Size == 0 {
		return b, nil
	}
	if _, err := r.File.ReadAt(b, r.Position); err != nil {
		return nil, fmt.Errorf("reading %s at %d: %w", r.File.Name(), r.Position, err)
	}
	return b, nil
}

// WriteTo writes the range to w, copying through a buffer (Go's sendfile needs the
// file's own position; the rpc layer sends held ranges with sendfile itself).
func (r FileRange) WriteTo(w io.Writer) (int64, error) {
	if r.Size == 0 {
		return 0, nil
	}
	return io.Copy(w, io.NewSectionReader(r.File, r.Position, r.Size))
}

var emptyRange = FileRange{FirstOffset: -1, LastOffset: -1}

// Read returns whole batches starting with the batch that holds offset, from a single
// segment: at least one batch even when it is larger than maxBytes (Kafka's rule), then
// more while they fit in maxBytes, never a batch with offsets at or above upTo (the
// caller passes the high watermark or the log end offset). An offset below the log start
// offset or above the log end offset is ErrOffsetOutOfRange; offset at or past upTo gives
// an empty range.
func (l *Log) Read(offset int64, maxBytes int, upTo int64) (FileRange, error) {
	defer l.release()
	if l.closed {
		return emptyRange, ErrClosed
	}
	if offset < l.localLogStartOffset || offset > l.LogEndOffset() {
		return emptyRange, fmt.Errorf("%w: offset %d, log has [%d, %d)", ErrOffsetOutOfRange, offset, l.localLogStartOffset, l.LogEndOffset())
	}
	if offset >= upTo {
		return emptyRange, nil
	}
	for i := l.segmentIndexFor(offset); i < len(l.segments); i++ {
		s := l.segments[i]
		pos, h, ok := s.tailBatch(offset)
		if !ok {
			var err error
			if pos, h, ok, err = s.translateOffset(offset); err != nil {
				return emptyRange, err
			}
		}
		if !ok {
			continue // offset is past this segment's batches
		}
		r, err := s.readFrom(pos, h, maxBytes, upTo)
		if r.Size > 0 && i+1 < len(l.segments) && l.segments[i+1].baseOffset < upTo {
			r.FallingBehind = true
		}
		return r, err
	}
	return emptyRange, nil
}

// readFrom collects batches from pos (holding the batch h) as Read describes.
func (s *segment) readFrom(pos int64, h BatchHeader, maxBytes int, upTo int64) (FileRange, error) {
	if h.LastOffset() >= upTo {
		return emptyRange, nil
	}
	if err := s.use(); err != nil {
		return emptyRange, err
	}
	r := FileRange{File: s.log, ref: s.logRef, Position: pos, Size: h.Size(), FirstOffset: h.BaseOffset, LastOffset: h.LastOffset()}
	var buf [BatchHeaderSize]byte
	limit := s.size // where the range must end at the latest
	if int64(maxBytes) < s.size-pos {
		limit = pos + int64(maxBytes)
	}
	next := pos + h.Size()
	end, last, ok, tooLarge := s.indexedEnd(next, limit, upTo, &buf)
	if ok {
		r.Size, r.LastOffset, next = end-pos, last, end
	}
	// Scan the (few) batches past the last index entry that fits.
	for next < s.size && next != tooLarge && limit-next >= BatchHeaderSize {
		nh, err := s.readHeaderAt(next, &buf)
		if err != nil {
			return emptyRange, fmt.Errorf("segment %d at position %d: %w", s.baseOffset, next, err)
		}
		if nh.LastOffset() >= upTo || r.Size+nh.Size() > int64(maxBytes) {
			break
		}
		r.Size += nh.Size()
		r.LastOffset = nh.LastOffset()
		next += nh.Size()
	}
	if s.c != nil {
		s.c.pin(s)
		r.pin = &rangePin{c: s.c, s: s}
	}
	return r, nil
}

// TimestampOffset is a record's offset and timestamp.
type TimestampOffset struct {
	Offset    int64
	Timestamp int64
}

// OffsetForTimestamp finds the first record, at or after the log start offset, whose
// timestamp is at least ts (ListOffsets by timestamp). ok is false when there is none.
func (l *Log) OffsetForTimestamp(ts int64) (TimestampOffset, bool, error) {
	defer l.release()
	if l.closed {
		return TimestampOffset{}, false, ErrClosed
	}
	for _, s := range l.segments {
		if s.maxTimestamp < ts || s.nextOffset <= l.localLogStartOffset {
			continue
		}
		from := max(s.timestampFloor(ts), l.localLogStartOffset)
		pos := s.indexedPosition(from)
		var hb [BatchHeaderSize]byte
		for pos < s.size {
			h, err := s.readHeaderAt(pos, &hb)
			if err != nil {
				return TimestampOffset{}, false, err
			}
			if h.LastOffset() >= from && h.MaxTimestamp >= ts {
				// Records are filtered by the log start offset, not by from: a time index
				// entry's offset is the last offset of the batch holding its timestamp, and
				// earlier records of that batch can hold ts too (Kafka's searchForTimestamp).
				r, ok, err := l.recordAtOrAfter(s, pos, h, func(rts int64) bool { return rts >= ts }, l.localLogStartOffset)
				if err != nil || ok {
					return r, ok, err
				}
				// Only records below the log start offset match: the answer is further on.
			}
			pos += h.Size()
		}
	}
	return TimestampOffset{}, false, nil
}

// MaxTimestampOffset returns the offset and timestamp of the first record with the
// largest timestamp in the log (ListOffsets with timestamp -3). ok is false for an empty
// log or one without timestamps.
func (l *Log) MaxTimestampOffset() (TimestampOffset, bool, error) {
	defer l.release()
	if l.closed {
		return TimestampOffset{}, false, ErrClosed
	}
	var best *segment
	for _, s := range l.segments {
		if s.nextOffset > l.localLogStartOffset && s.maxTimestamp >= 0 && (best == nil || s.maxTimestamp > best.maxTimestamp) {
			best = s
		}
	}
	if best == nil {
		return TimestampOffset{}, false, nil
	}
	ts := best.maxTimestamp
	pos, h, ok, err := best.translateOffset(best.offsetOfMaxTimestamp)
	if err != nil || !ok {
		return TimestampOffset{}, false, err
	}
	r, ok, err := l.recordAtOrAfter(best, pos, h, func(rts int64) bool { return rts == ts }, l.localLogStartOffset)
	if err == nil && !ok {
		// The records holding the maximum are below the log start offset.
		r, ok = TimestampOffset{Offset: max(h.BaseOffset, l.localLogStartOffset), Timestamp: ts}, true
	}
	return r, ok, err
}

// recordAtOrAfter returns the first record of the batch h at pos, at or after offset
// from, whose timestamp satisfies match; ok is false when no such record is in the batch.
// Without a decompressor, a compressed batch (and a LogAppendTime batch, always) answers
// its first offset at or after from, with the batch's max timestamp.
func (l *Log) recordAtOrAfter(s *segment, pos int64, h BatchHeader, match func(int64) bool, from int64) (TimestampOffset, bool, error) {
	fallback := TimestampOffset{Offset: max(h.BaseOffset, from), Timestamp: h.MaxTimestamp}
	if h.LogAppendTime() {
		return fallback, true, nil // every record carries the batch's max timestamp
	}
	body := make([]byte, h.Size()-BatchHeaderSize)
	if err := s.use(); err != nil {
		return TimestampOffset{}, false, err
	}
	if _, err := s.log.ReadAt(body, pos+BatchHeaderSize); err != nil {
		return TimestampOffset{}, false, err
	}
	return recordInBody(h, body, from, match, l.decompress)
}

// recordInBody returns the first record of the batch h, whose records section is body
// (compressed as the batch is), at or after offset from whose timestamp satisfies
// match. Without a decompressor a compressed batch answers its first offset at or after
// from with its max timestamp.
func recordInBody(h BatchHeader, body []byte, from int64, match func(int64) bool, decompress Decompressor) (TimestampOffset, bool, error) {
	if h.Codec() != 0 {
		if decompress == nil {
			return TimestampOffset{Offset: max(h.BaseOffset, from), Timestamp: h.MaxTimestamp}, true, nil
		}
		var err error
		if body, err = decompress(h.Codec(), body); err != nil {
			return TimestampOffset{}, false, fmt.Errorf("decompressing batch at offset %d: %w", h.BaseOffset, err)
		}
	}
	var found TimestampOffset
	ok := false
	err := walkRecords(body, h.RecordCount, func(offsetDelta int32, timestampDelta int64) bool {
		off, rts := h.BaseOffset+int64(offsetDelta), h.BaseTimestamp+timestampDelta
		if off >= from && match(rts) {
			found, ok = TimestampOffset{off, rts}, true
			return false
		}
		return true
	})
	if err != nil {
		return TimestampOffset{}, false, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
	}
	return found, ok, nil
}
