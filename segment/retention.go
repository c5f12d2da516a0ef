package segment

import "fmt"

// RetentionResult says what EnforceRetention deleted.
type RetentionResult struct {
	DeletedSegments []int64 // base offsets
	DeletedBytes    int64
	LogStartOffset  int64 // after deletion (over both tiers, LogStartOffset)
	// LocalLogStartOffset is the local log start offset after deletion.
	LocalLogStartOffset int64
}

// EnforceRetention deletes whole non-active segments, oldest first: those wholly below
// the local log start offset, those whose largest timestamp is older than retention.ms,
// and the oldest ones while the log is larger than retention.bytes — but only segments
// wholly below upTo (the caller passes the high watermark: uncommitted data is never
// retained away). It advances the log start offset to the first remaining segment.
//
// With remote storage enabled (KIP-405, tiered.go) the limits are the local ones
// (local.retention.ms and local.retention.bytes) and a segment goes only once it is
// wholly at or below the highest offset copied to remote storage, whatever the limits
// say; deleting it moves the local log start offset only.
func (l *Log) EnforceRetention(upTo int64) (RetentionResult, error) {
	defer l.release()
	if err := l.writable(); err != nil {
		return RetentionResult{}, err
	}
	retentionMs, retentionBytes := l.cfg.localRetention()
	nowMs := l.now().UnixMilli()
	size := l.Size()
	n := 0 // segments to delete from the front
	for n < len(l.segments)-1 {
		s, next := l.segments[n], l.segments[n+1]
		if next.baseOffset > upTo || !l.copiedBelow(next.baseOffset) {
			break
		}
		belowStart := next.baseOffset <= l.localLogStartOffset
		expired := retentionMs >= 0 && s.maxTimestamp >= 0 && nowMs-s.maxTimestamp > retentionMs
		tooBig := retentionBytes >= 0 && size-s.size >= retentionBytes
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
// at or below the current log start offset changes nothing. With remote storage enabled
// an offset below the local log start offset moves only the log start (the remote
// segments below it are the remote log manager's to delete); one above moves the local
// log start too, and the local segments wholly below it go at once, copied or not, as
// Kafka deletes them (the copier skips them).
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
	l.localLogStartOffset = max(l.localLogStartOffset, offset)
	n := 0
	for n < len(l.segments)-1 && l.segments[n+1].baseOffset <= l.localLogStartOffset && l.copiedBelow(l.segments[n+1].baseOffset) {
		n++
	}
	_, err := l.deleteOldestSegments(n)
	return err
}

// deleteOldestSegments deletes the first n segments (never the active one), moves the log
// start offset up to the first remaining segment (the log start offset too without
// remote storage) and trims the leader epoch cache to the log start offset.
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
	l.localLogStartOffset = max(l.localLogStartOffset, l.segments[0].baseOffset)
	if !l.cfg.RemoteStorageEnable {
		l.logStartOffset = l.localLogStartOffset
	}
	res.LogStartOffset, res.LocalLogStartOffset = l.logStartOffset, l.localLogStartOffset
	if n > 0 {
		if err := syncDir(l.dir); err != nil {
			return res, l.fail("delete segment", err)
		}
	}
	// The epoch cache covers both tiers: remote reads and followers rebuilding from
	// remote storage need the epochs below the local segments.
	if err := l.epochs.TruncateFromStart(l.logStartOffset); err != nil {
		return res, l.fail("leader epoch checkpoint", err)
	}
	return res, nil
}
