package segment

import "os"

// syncFile fsyncs one segment or index file: a variable so that a test can count the
// fsyncs a close or flush makes.
var syncFile = (*os.File).Sync

// SyncTarget returns the .log files that hold offsets at or above the recovery point and
// the log end offset they cover. An owner that fsyncs them without holding its lock (group
// commit: one fsync covers every append made meanwhile) then calls MarkFlushed with that
// offset. Index files need no fsync: recovery rebuilds them.
func (l *Log) SyncTarget() ([]*os.File, int64) {
	var files []*os.File
	for i := l.segmentIndexFor(l.recoveryPoint); i < len(l.segments); i++ {
		s := l.segments[i]
		if err := s.use(); err != nil {
			// Not synced here: the owner's fallback (Flush under its lock) reports it.
			return append(files, closedFile), l.LogEndOffset()
		}
		files = append(files, s.log)
	}
	return files, l.LogEndOffset()
}

// MarkFlushed records that every offset below offset is on disk (after the owner synced
// the files of SyncTarget). Offsets past the log end offset (a concurrent truncation) are
// ignored.
func (l *Log) MarkFlushed(offset int64) {
	defer l.release()
	if offset > l.recoveryPoint && offset <= l.LogEndOffset() {
		l.recoveryPoint = offset
		// Kafka's count of unflushed messages is the log end offset less the recovery
		// point; with every offset on disk there is none, and Flush (at a clean close,
		// at flush.ms) has nothing to do but the indexes' fsyncs if they have entries
		// written since theirs.
		l.unflushedMessages = min(l.unflushedMessages, l.LogEndOffset()-offset)
		l.noteDue()
		if s := l.active(); s.dirty && s.nextOffset <= offset && s.use() == nil {
			s.dirty = false
		}
	}
}

// closedFile stands for a segment file SyncTarget could not open: syncing it fails with
// os.ErrClosed, which sends the owner to its Flush fallback.
var closedFile = func() *os.File {
	r, w, err := os.Pipe()
	if err != nil {
		panic(err) // at package initialisation
	}
	w.Close()
	r.Close()
	return r
}()
