package segment

import (
	"fmt"
	"os"
)

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
		if s := l.segments[i]; s.nextOffset > from {
			if err := s.scanHeaders(from, &buf, fn); err != nil {
				return fmt.Errorf("segment %d: %w", s.baseOffset, err)
			}
		}
	}
	return nil
}

// scanHeaders calls fn with the header of every batch of s from the one holding from. A
// scan of the whole segment whose files the cache has closed reads its .log through a
// descriptor of its own, opened for the scan alone, rather than open its three files and
// map its indexes: a start replays the few batches of many replicas whose files their
// load closed again.
func (s *segment) scanHeaders(from int64, buf *[BatchHeaderSize]byte, fn func(BatchHeader) error) error {
	var f *os.File // s.log once pinned (use), or a descriptor of the scan's own
	pos := int64(0)
	if from <= s.baseOffset && s.c.closed(s) {
		own, err := OpenFile(segmentPath(s.dir, s.baseOffset, LogFileSuffix), os.O_RDONLY, 0)
		if err != nil {
			return err
		}
		defer own.Close()
		f = own
	} else {
		if err := s.use(); err != nil {
			return err
		}
		f = s.log
		if from > s.baseOffset {
			var ok bool
			var err error
			if pos, _, ok, err = s.translateOffset(from); err != nil || !ok {
				return err
			}
		}
	}
	for pos < s.size {
		h, err := s.readHeaderFrom(f, pos, buf)
		if err != nil {
			return fmt.Errorf("at position %d: %w", pos, err)
		}
		if err := fn(h); err != nil {
			return err
		}
		pos += h.Size()
	}
	return nil
}

// ActiveSegmentBaseOffset is the base offset of the active (last) segment. An append
// whose AppendInfo.SegmentBaseOffset differs from the value before it rolled the log.
func (l *Log) ActiveSegmentBaseOffset() int64 { return l.active().baseOffset }

// FirstSegmentBaseOffset is the base offset of the oldest segment.
func (l *Log) FirstSegmentBaseOffset() int64 { return l.segments[0].baseOffset }
