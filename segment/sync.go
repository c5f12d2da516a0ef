package segment

import "os"

// SyncTarget returns the .log files that hold offsets at or above the recovery point and
// the log end offset they cover. An owner that fsyncs them without holding its lock (group
// commit: one fsync covers every append made meanwhile) then calls MarkFlushed with that
// offset. Index files need no fsync: recovery rebuilds them.
func (l *Log) SyncTarget() ([]*os.File, int64) {
	var files []*os.File
	for i := l.segmentIndexFor(l.recoveryPoint); i < len(l.segments); i++ {
		files = append(files, l.segments[i].log)
	}
	return files, l.LogEndOffset()
}

// MarkFlushed records that every offset below offset is on disk (after the owner synced
// the files of SyncTarget). Offsets past the log end offset (a concurrent truncation) are
// ignored.
func (l *Log) MarkFlushed(offset int64) {
	if offset > l.recoveryPoint && offset <= l.LogEndOffset() {
		l.recoveryPoint = offset
	}
}
