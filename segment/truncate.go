package segment

import "fmt"

// TruncateTo removes every batch that holds an offset at or above offset and returns the
// new log end offset. Truncation works at batch boundaries: a batch that straddles offset
// is removed whole, so the new log end offset may be below offset. Segments after the
// cut are deleted, indexes are fixed, the leader epoch cache is truncated, and an offset
// below the log start offset truncates fully and starts there (as Kafka does).
func (l *Log) TruncateTo(offset int64) (int64, error) {
	defer l.release()
	l.generation++
	if err := l.writable(); err != nil {
		return 0, err
	}
	if offset < 0 {
		return 0, fmt.Errorf("%w: truncate to negative offset %d", ErrOffsetOutOfRange, offset)
	}
	if offset >= l.LogEndOffset() {
		// No record goes, but an epoch that starts at the log end holds none: a
		// leadership of this replica that appended nothing. Kafka drops it here too
		// (UnifiedLog.truncateTo), or a follower would keep sending it as its last
		// fetched epoch and the leader keep answering the same diverging epoch.
		if err := l.epochs.TruncateFromEnd(l.LogEndOffset()); err != nil {
			return l.LogEndOffset(), l.fail("leader epoch checkpoint", err)
		}
		return l.LogEndOffset(), nil
	}
	if offset < l.localLogStartOffset {
		return offset, l.TruncateFullyAndStartAt(offset)
	}
	// Delete whole segments at or above offset, keeping at least the first.
	for len(l.segments) > 1 && l.active().baseOffset >= offset {
		s := l.active()
		l.segments = l.segments[:len(l.segments)-1]
		if err := s.remove(); err != nil {
			return 0, l.fail("truncate", err)
		}
	}
	s := l.active()
	if _, err := s.truncateTo(offset, l.cfg.IndexIntervalBytes, l.cfg.Compacted); err != nil {
		return 0, l.fail("truncate", err)
	}
	if err := s.sync(); err != nil {
		return 0, l.fail("truncate", err)
	}
	if err := syncDir(l.dir); err != nil {
		return 0, l.fail("truncate", err)
	}
	leo := l.LogEndOffset()
	l.recoveryPoint = min(l.recoveryPoint, leo)
	l.highestCopiedOffset = min(l.highestCopiedOffset, leo-1) // what follows may be another lineage's
	if err := l.epochs.TruncateFromEnd(leo); err != nil {
		return leo, l.fail("leader epoch checkpoint", err)
	}
	return leo, nil
}

// TruncateFullyAndStartAt deletes every segment and starts an empty log at offset, which
// becomes the log start offset; the leader epoch cache is cleared. Followers use it when
// the leader's log starts past theirs.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	defer l.release()
	l.generation++
	if err := l.writable(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("%w: start at negative offset %d", ErrOffsetOutOfRange, offset)
	}
	if err := l.makeDirDurable(); err != nil {
		return l.fail("truncate fully", err)
	}
	if err := l.writeBirthFile(); err != nil { // createSegment fsyncs the directory
		return l.fail("partition metadata file", err)
	}
	for _, s := range l.segments {
		if err := s.remove(); err != nil {
			return l.fail("truncate fully", err)
		}
	}
	l.segments = nil
	s, err := createSegment(l.dir, offset, l.cfg, l.now())
	if err == nil {
		l.track(s)
	}
	if err != nil {
		return l.fail("truncate fully", err)
	}
	l.segments = []*segment{s}
	l.localLogStartOffset, l.logStartOffset, l.recoveryPoint, l.unflushedMessages = offset, offset, offset, 0
	l.highestCopiedOffset = min(l.highestCopiedOffset, offset-1)
	if err := l.epochs.clear(); err != nil {
		return l.fail("leader epoch checkpoint", err)
	}
	return nil
}
