package segment

import "os"

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
