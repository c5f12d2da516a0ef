package segment

import "fmt"

// RetentionResult says what EnforceRetention deleted.
type RetentionResult struct {
	DeletedSegments []int64 // base offsets
	DeletedBytes    int64
	LogStartOffset  int64 // after deletion
}

// EnforceRetention deletes whole non-active segments, oldest first: those wholly below
// the log start offset, those whose largest timestamp is older than retention.ms, and the
// oldest ones while the log is larger than retention.bytes — but only segments wholly
// below upTo (the caller passes the high watermark: uncommitted data is never retained
// away). It advances the log start offset to the first remaining segment.
func (l *Log) EnforceRetention(upTo int64) (RetentionResult, error) {
	defer l.release()
	if err := l.writable(); err != nil {
		return RetentionResult{}, err
	}
	nowMs := l.now().UnixMilli()
	size := l.Size()
	n := 0 // segments to delete from the front
	for n < len(l.segments)-1 {
		s, next := l.segments[n], l.segments[n+1]
		if next.baseOffset > upTo {
			break
		}
		belowStart := next.baseOffset <= l.logStartOffset
		expired := l.cfg.RetentionMs >= 0 && s.maxTimestamp >= 0 && nowMs-s.maxTimestamp > l.cfg.RetentionMs
		tooBig := l.cfg.RetentionBytes >= 0 && size-s.size >= l.cfg.RetentionBytes
		if !belowStart && !expired && !tooBig {
			break
		}
		size -= s.size
		n++
	}
	return l.deleteOldestSegments(n)
}

// AdvanceLogStartOffset raises the log start offset to offset (DeleteRecords) and deletes
// the segments wholly below it. An offset above the log end offset is out of range; one
// at or below the current log start offset changes nothing.
func (l *Log) AdvanceLogStartOffset(offset int64) error {
	defer l.release()
	if err := l.writable(); err != nil {
		return err
	}
	if offset > l.LogEndOffset() {
		return fmt.Errorf("%w: log start offset %d is past the log end offset %d", ErrOffsetOutOfRange, offset, l.LogEndOffset())
	}
	if offset <= l.logStartOffset {
		return nil
	}
	l.logStartOffset = offset
	n := 0
	for n < len(l.segments)-1 && l.segments[n+1].baseOffset <= offset {
		n++
	}
	_, err := l.deleteOldestSegments(n)
	return err
}

// deleteOldestSegments deletes the first n segments (never the active one), moves the log
// start offset up to the first remaining segment and trims the leader epoch cache.
func (l *Log) deleteOldestSegments(n int) (RetentionResult, error) {
	var res RetentionResult
	if n > 0 {
		l.generation++
	}
	for _, s := range l.segments[:n] {
		res.DeletedSegments = append(res.DeletedSegments, s.baseOffset)
		res.DeletedBytes += s.size
		if err := s.remove(); err != nil {
			return res, l.fail("delete segment", err)
		}
	}
	l.segments = append(l.segments[:0], l.segments[n:]...)
	l.logStartOffset = max(l.logStartOffset, l.segments[0].baseOffset)
	res.LogStartOffset = l.logStartOffset
	if n > 0 {
		if err := syncDir(l.dir); err != nil {
			return res, l.fail("delete segment", err)
		}
	}
	if err := l.epochs.TruncateFromStart(l.logStartOffset); err != nil {
		return res, l.fail("leader epoch checkpoint", err)
	}
	return res, nil
}
