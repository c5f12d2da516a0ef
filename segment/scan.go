package segment

import "fmt"

// ScanBatchHeaders calls fn with the header of every batch whose last offset is at least
// from, in offset order, up to the log end offset. It reads headers only (no CRC
// checks: the data was validated when appended or recovered). Rebuilding state derived
// from the log (the producer state) uses it.
func (l *Log) ScanBatchHeaders(from int64, fn func(BatchHeader) error) error {
	defer l.release()
	if l.closed {
		return ErrClosed
	}
	var buf [BatchHeaderSize]byte
	for i := l.segmentIndexFor(from); i < len(l.segments); i++ {
		s := l.segments[i]
		if s.nextOffset <= from {
			continue
		}
		pos := int64(0)
		if from > s.baseOffset {
			var ok bool
			var err error
			if pos, _, ok, err = s.translateOffset(from); err != nil {
				return err
			} else if !ok {
				continue
			}
		}
		for pos < s.size {
			h, err := s.readHeaderAt(pos, &buf)
			if err != nil {
				return fmt.Errorf("segment %d at position %d: %w", s.baseOffset, pos, err)
			}
			if err := fn(h); err != nil {
				return err
			}
			pos += h.Size()
		}
	}
	return nil
}

// ActiveSegmentBaseOffset is the base offset of the active (last) segment. An append
// whose AppendInfo.SegmentBaseOffset differs from the value before it rolled the log.
func (l *Log) ActiveSegmentBaseOffset() int64 { return l.active().baseOffset }

// FirstSegmentBaseOffset is the base offset of the oldest segment.
func (l *Log) FirstSegmentBaseOffset() int64 { return l.segments[0].baseOffset }
