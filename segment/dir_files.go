package segment

import (
	"os"
	"path/filepath"
)

// The small files of a partition directory that are not the log's own (producer state
// snapshots, partition.metadata) are made durable by the directory fsyncs the log makes
// anyway, not by one of their own:
//
//   - at a roll, the RollObserver writes its files (contents fsynced, renamed into place)
//     after the old segment is fsynced and before the new segment is created, whose
//     directory fsync then covers their renames; the recovery point moves to the new
//     segment's base offset only after that fsync (Kafka flushes the roll's producer
//     snapshot, the segments and the directory together before it moves the recovery
//     point, KAFKA-15046);
//   - a file written with WriteMetadataFile while the log has no segment file yet (a
//     new log's unborn segment) is written when the first segment is born, just before
//     the birth's directory fsync, so it is durable before the log's first record
//     (Kafka's PartitionMetadataFile, flushed before the first append).

// RollObserver is told of every roll of a Log (SetRollObserver).
type RollObserver interface {
	// BeforeRoll runs once the active segment is sealed and fsynced and before the
	// segment at newBaseOffset is created: a file it writes in the partition directory
	// with fsynced contents (WriteFileSynced) is durable once the roll returns. It runs
	// under the owner's lock, inside the Log call that rolls. An error fails the roll
	// and the log (ErrLogFailed, sticky): the recovery point never moves past a segment
	// whose files the observer could not write.
	BeforeRoll(newBaseOffset int64) error
}

// SetRollObserver sets the observer of the log's rolls (nil: none).
func (l *Log) SetRollObserver(o RollObserver) { l.rollObserver = o }

// DirFile is a small file of a partition directory (WriteMetadataFile). An unborn log
// keeps a pointer to it until its first segment is born, so one DirFile may serve every
// replica of a topic; it must not change once handed over.
type DirFile struct {
	Name string
	Data []byte
}

// Unborn reports whether the log has no segment file yet: a new log (or one never
// written to) before the first use of its active segment.
func (l *Log) Unborn() bool { return l.active().unborn }

// WriteMetadataFile writes f into the partition directory so that a
// crash leaves it whole or absent, never torn, and durable before the log's first record:
// while the log is unborn it is written when the first segment is born (first append, or
// a full truncation), covered by that birth's directory fsync, so a partition creation
// costs no fsync for it; otherwise it is written now, with a directory fsync. A file
// still waiting when the log is closed is not written (the log holds no record).
func (l *Log) WriteMetadataFile(f *DirFile) error {
	if l.Unborn() {
		l.birthFile = f
		return nil
	}
	return WriteFileAtomic(filepath.Join(l.dir, f.Name), f.Data)
}

// writeBirthFile writes the file WriteMetadataFile left for the first segment's birth.
// Its callers (append, TruncateFullyAndStartAt) have made the directory (makeDir).
// The caller's next step creates segment files and fsyncs the directory; when the active
// segment was born meanwhile (no such step follows), the directory is fsynced here.
func (l *Log) writeBirthFile() error {
	f := l.birthFile
	if f == nil {
		return nil
	}
	if err := WriteFileSynced(filepath.Join(l.dir, f.Name), f.Data); err != nil {
		return err
	}
	l.birthFile = nil
	if !l.active().unborn {
		return syncDir(l.dir)
	}
	return nil
}

// makeDir makes the partition directory of a log that has none (Open found it absent)
// before the log writes its first file there, so that a replica that never holds a
// record never costs an inode (Kafka makes the directory when it creates the replica).
// The first segment's birth makes it too when nothing else did (segment.attach). The
// caller makes the new directory's name durable: the first segment's birth fsyncs the
// log directory, and makeDirDurable does it at once for the other writers. It reports
// whether it made the directory. Owner only.
func (l *Log) makeDir() (made bool, err error) {
	if !l.dirAbsent {
		return false, nil
	}
	if len(l.segments) > 0 && !l.active().unborn {
		l.dirAbsent = false // made by the first segment's birth (segment.attach)
		return false, nil
	}
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return false, err
	}
	l.dirAbsent = false
	return true, nil
}

// makeDirDurable is makeDir for a writer whose next step does not fsync the log
// directory (a checkpoint, a segment made by createSegment, which fsyncs only the
// partition directory): the new directory's name is fsynced before anything is written
// in it.
func (l *Log) makeDirDurable() error {
	made, err := l.makeDir()
	if made && err == nil {
		err = syncDir(filepath.Dir(l.dir))
	}
	return err
}
