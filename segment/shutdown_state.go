package segment

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"
)

// A clean start of many written replicas spent most of its time finding out, file by
// file, what each log's clean close already knew: the directory listing, every
// segment's three files (opened, indexes mapped and validated, the tail's headers
// read, then closed again until first use) and the leader-epoch-checkpoint. A Log
// closed cleanly describes itself instead (ShutdownState: its segments' sizes, offsets,
// timestamps and index entry counts, its leader epochs as the file holds them); the
// owner keeps the descriptions of a whole log directory in one file written with the
// clean shutdown marker, and a clean start hands each one back (OpenOptions.ShutdownState)
// so that Open builds the Log from it without touching the partition directory. The
// files are opened on first use, as after any clean open. Petrel's own shortcut: Kafka
// lists and loads every log at a start (its clean shutdown marker only spares the
// recovery scan).

// ShutdownState describes a cleanly closed Log: enough to open it again without reading
// its directory (Open with OpenOptions.ShutdownState). Its encoding is AppendShutdownState's.
type ShutdownState struct {
	segments []segmentState
	epochs   []EpochEntry
	// epochsUnflushed is set when leader-epoch-checkpoint may hold entries the
	// description leaves out (those starting at the log end): rewritten before the next
	// append, as after a listing open.
	epochsUnflushed bool
	// txnIndexAbsent is set when no segment of the log has a .txnindex file.
	txnIndexAbsent bool
	// compacted is the Config.Compacted the log was closed with: a log opened under the
	// other policy is loaded from its files (the gaps compaction leaves are checked).
	compacted      bool
	logStartOffset int64
	// otherFiles, when otherFilesSet, are the owner's files in the directory
	// (SetOtherFiles), what TakeOpenListing returns after an open from the description.
	otherFiles    []string
	otherFilesSet bool
	// ownerData is what the owner keeps with the description (SetOwnerData).
	ownerData []byte
}

// SetOwnerData keeps data, the owner's own state as of the log end (its replica's
// producer state), with the description: after an open from it, TakeOpenOwnerData
// returns it once.
func (st *ShutdownState) SetOwnerData(data []byte) { st.ownerData = data }

// SetOtherFiles records names, the files other than segment files that the log's owner
// keeps in its directory (producer state snapshots), when the owner knows them exactly:
// after an open from the description, TakeOpenListing returns them as it returns a
// listing open's names. Without it the owner lists the directory itself.
func (st *ShutdownState) SetOtherFiles(names []string) {
	st.otherFiles, st.otherFilesSet = names, true
}

// segmentState is one segment's in-memory state after its log's clean close.
type segmentState struct {
	baseOffset, size, nextOffset                                   int64
	maxTimestamp, offsetOfMaxTimestamp, firstBatchTimestamp        int64
	created                                                        int64 // Unix nanoseconds
	bytesSinceLastIndexEntry, offsetIndexEntries, timeIndexEntries int64
}

// shutdownStateVersion is the first byte of an encoded ShutdownState.
const shutdownStateVersion = 1

// maxShutdownStateSegments bounds a decoded description (a log of more segments is opened
// from its files): a corrupt length never allocates more.
const maxShutdownStateSegments = 1 << 20

// LogEndOffset is the log end offset of the log described.
func (st *ShutdownState) LogEndOffset() int64 {
	if len(st.segments) == 0 {
		return -1
	}
	return st.segments[len(st.segments)-1].nextOffset
}

// ShutdownState describes the log after a Close that succeeded, for OpenOptions.ShutdownState.
// ok is false when the log is not closed, failed, or has no segment file yet (a replica
// never written to is opened without a listing anyway when its directory is absent).
func (l *Log) ShutdownState() (st ShutdownState, ok bool) {
	if !l.closed || l.failure != nil || l.dirAbsent || l.Unborn() || l.recoveryPoint != l.LogEndOffset() {
		return ShutdownState{}, false
	}
	st.segments = make([]segmentState, len(l.segments))
	for i, s := range l.segments {
		if len(s.offsetIndex.pending) > 0 || len(s.timeIndex.pending) > 0 {
			return ShutdownState{}, false
		}
		st.segments[i] = segmentState{baseOffset: s.baseOffset, size: s.size, nextOffset: s.nextOffset,
			maxTimestamp: s.maxTimestamp, offsetOfMaxTimestamp: s.offsetOfMaxTimestamp,
			firstBatchTimestamp: s.firstBatchTimestamp, created: s.created.UnixNano(),
			bytesSinceLastIndexEntry: int64(s.bytesSinceLastIndexEntry),
			offsetIndexEntries:       int64(s.offsetIndex.entries), timeIndexEntries: int64(s.timeIndex.entries)}
	}
	// The checkpoint file holds the entries that start below the log end: a
	// leadership's entry without records (AssignLeaderStart) is in memory only, and an
	// open drops the others that start at the end (truncateEndAtOpen).
	end := l.LogEndOffset()
	for _, e := range l.epochs.entries {
		if e.StartOffset < end {
			st.epochs = append(st.epochs, e)
		}
	}
	st.epochsUnflushed = l.epochs.unflushed
	st.txnIndexAbsent = l.txnIndexAbsent
	st.compacted = l.cfg.Compacted
	st.logStartOffset = l.logStartOffset
	return st, true
}

// AppendShutdownState appends st's encoding to b: a version byte, flags, then varints.
func AppendShutdownState(b []byte, st ShutdownState) []byte {
	b = append(b, shutdownStateVersion)
	var flags byte
	for i, f := range []bool{st.epochsUnflushed, st.txnIndexAbsent, st.compacted, st.otherFilesSet, st.ownerData != nil} {
		if f {
			flags |= 1 << i
		}
	}
	b = append(b, flags)
	b = binary.AppendVarint(b, st.logStartOffset)
	b = binary.AppendUvarint(b, uint64(len(st.segments)))
	for _, s := range st.segments {
		for _, v := range []int64{s.baseOffset, s.size, s.nextOffset, s.maxTimestamp, s.offsetOfMaxTimestamp,
			s.firstBatchTimestamp, s.created, s.bytesSinceLastIndexEntry, s.offsetIndexEntries, s.timeIndexEntries} {
			b = binary.AppendVarint(b, v)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(st.epochs)))
	for _, e := range st.epochs {
		b = binary.AppendVarint(b, int64(e.Epoch))
		b = binary.AppendVarint(b, e.StartOffset)
	}
	if st.otherFilesSet {
		b = binary.AppendUvarint(b, uint64(len(st.otherFiles)))
		for _, n := range st.otherFiles {
			b = binary.AppendUvarint(b, uint64(len(n)))
			b = append(b, n...)
		}
	}
	if st.ownerData != nil {
		b = binary.AppendUvarint(b, uint64(len(st.ownerData)))
		b = append(b, st.ownerData...)
	}
	return b
}

// errShutdownState is the error of a description that does not decode or does not
// describe a log.
var errShutdownState = errors.New("segment: invalid shutdown state of a log")

// ParseShutdownState decodes what AppendShutdownState wrote, the whole of b. It checks that
// the description is a log's: segments in offset order, each ending at or before the
// next one starts, epochs growing. Open trusts nothing else in it.
func ParseShutdownState(b []byte) (ShutdownState, error) {
	var st ShutdownState
	if len(b) < 2 || b[0] != shutdownStateVersion || b[1]&^31 != 0 {
		return st, fmt.Errorf("%w: header", errShutdownState)
	}
	st.epochsUnflushed, st.txnIndexAbsent, st.compacted, st.otherFilesSet = b[1]&1 != 0, b[1]&2 != 0, b[1]&4 != 0, b[1]&8 != 0
	d := stateDecoder{b: b[2:]}
	st.logStartOffset = d.varint()
	n := d.uvarint()
	if n == 0 || n > maxShutdownStateSegments || n > uint64(len(d.b))/10 {
		return st, fmt.Errorf("%w: %d segments", errShutdownState, n)
	}
	st.segments = make([]segmentState, n)
	for i := range st.segments {
		s := &st.segments[i]
		for _, v := range []*int64{&s.baseOffset, &s.size, &s.nextOffset, &s.maxTimestamp, &s.offsetOfMaxTimestamp,
			&s.firstBatchTimestamp, &s.created, &s.bytesSinceLastIndexEntry, &s.offsetIndexEntries, &s.timeIndexEntries} {
			*v = d.varint()
		}
	}
	ne := d.uvarint()
	if ne > uint64(len(d.b))/2 {
		return st, fmt.Errorf("%w: %d epochs", errShutdownState, ne)
	}
	if ne > 0 {
		st.epochs = make([]EpochEntry, ne)
	}
	for i := range st.epochs {
		e, o := d.varint(), d.varint()
		if e < 0 || e > 1<<31-1 {
			d.err = true
		}
		st.epochs[i] = EpochEntry{Epoch: int32(e), StartOffset: o}
	}
	if st.otherFilesSet {
		nf := d.uvarint()
		if nf > uint64(len(d.b)) {
			return st, fmt.Errorf("%w: %d file names", errShutdownState, nf)
		}
		st.otherFiles = make([]string, 0, nf)
		for range nf {
			n := d.uvarint()
			if n == 0 || n > uint64(len(d.b)) {
				d.err = true
				break
			}
			st.otherFiles = append(st.otherFiles, string(d.b[:n]))
			d.b = d.b[n:]
		}
	}
	if b[1]&16 != 0 {
		n := d.uvarint()
		if n > uint64(len(d.b)) {
			return st, fmt.Errorf("%w: owner data of %d bytes", errShutdownState, n)
		}
		st.ownerData = append(make([]byte, 0, n), d.b[:n]...)
		d.b = d.b[n:]
	}
	if d.err || len(d.b) != 0 {
		return st, fmt.Errorf("%w: truncated or trailing bytes", errShutdownState)
	}
	return st, st.check()
}

// check reports a description that is not a log's.
func (st *ShutdownState) check() error {
	for i, s := range st.segments {
		switch {
		case s.baseOffset < 0 || s.size < 0 || s.size > 1<<31-1 || s.nextOffset < s.baseOffset ||
			(s.size == 0) != (s.nextOffset == s.baseOffset) || s.nextOffset-s.baseOffset > 1<<31:
			return fmt.Errorf("%w: segment %d", errShutdownState, s.baseOffset)
		case s.bytesSinceLastIndexEntry < 0 || s.bytesSinceLastIndexEntry > s.size ||
			s.offsetIndexEntries < 0 || s.offsetIndexEntries > s.size || s.timeIndexEntries < 0 || s.timeIndexEntries > s.size:
			return fmt.Errorf("%w: segment %d's indexes", errShutdownState, s.baseOffset)
		case i > 0 && s.baseOffset <= st.segments[i-1].baseOffset || i > 0 && s.baseOffset < st.segments[i-1].nextOffset:
			// (An empty segment before the last is a compacted log's: cleaning can empty
			// a group of segments.)
			return fmt.Errorf("%w: segment %d overlaps the one before", errShutdownState, s.baseOffset)
		}
	}
	for i, e := range st.epochs {
		if e.StartOffset < 0 || i > 0 && (e.Epoch <= st.epochs[i-1].Epoch || e.StartOffset < st.epochs[i-1].StartOffset) {
			return fmt.Errorf("%w: leader epochs out of order", errShutdownState)
		}
	}
	if st.logStartOffset < 0 {
		return fmt.Errorf("%w: log start offset %d", errShutdownState, st.logStartOffset)
	}
	return nil
}

// stateDecoder reads varints, remembering the first failure.
type stateDecoder struct {
	b   []byte
	err bool
}

func (d *stateDecoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *stateDecoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

// openShutdownState builds the Log st describes (Open with OpenOptions.ShutdownState): its
// segments in the file cache's care with their files closed, its leader epochs, no
// listing. ok is false when st does not fit the options (another recovery point or log
// start than the checkpoints', another cleanup policy, no file cache): the caller then
// opens the log from its files.
func (l *Log) openShutdownState(st *ShutdownState, opts OpenOptions) bool {
	if l.files == nil || st.compacted != l.cfg.Compacted || opts.RecoveryPoint != st.LogEndOffset() ||
		opts.LogStartOffset != st.logStartOffset || len(st.segments) == 0 {
		return false
	}
	l.segments = make([]*segment, len(st.segments))
	for i, ss := range st.segments {
		active := i == len(st.segments)-1
		s := &segment{
			baseOffset:               ss.baseOffset,
			dir:                      l.dir,
			size:                     ss.size,
			nextOffset:               ss.nextOffset,
			maxTimestamp:             ss.maxTimestamp,
			offsetOfMaxTimestamp:     ss.offsetOfMaxTimestamp,
			firstBatchTimestamp:      ss.firstBatchTimestamp,
			created:                  time.Unix(0, ss.created),
			bytesSinceLastIndexEntry: int(ss.bytesSinceLastIndexEntry),
			offsetIndex:              offsetIndex{closedIndex(l.dir, ss.baseOffset, offsetIndexEntrySize, l.cfg, int(ss.offsetIndexEntries), active), ss.baseOffset},
			timeIndex:                timeIndex{closedIndex(l.dir, ss.baseOffset, timeIndexEntrySize, l.cfg, int(ss.timeIndexEntries), active), ss.baseOffset},
		}
		s.c, s.pins = l.files, &l.held // in the cache's care, not open
		s.describedBy = l              // its file checked at the first open
		l.segments[i] = s
	}
	l.epochs = &LeaderEpochCache{dir: l.dir, entries: st.epochs, unflushed: st.epochsUnflushed, log: l}
	l.txnIndexAbsent = st.txnIndexAbsent
	l.openNames, l.openNamesSet = st.otherFiles, st.otherFilesSet
	l.openOwnerData = st.ownerData
	return true
}

// TakeOpenOwnerData returns, once, the data the owner kept with the description the log
// was opened from (ShutdownState.SetOwnerData); nil on later calls, after any write to the
// log, and for a log opened from its files.
func (l *Log) TakeOpenOwnerData() []byte {
	data := l.openOwnerData
	l.openOwnerData = nil
	return data
}

// checkDescribedSize checks, at the first open of a segment built from its log's
// clean-shutdown description, that its .log file f is the size the description names:
// one fstat of a file just opened, where a check at the start would stat every
// replica's file on cold caches. A file cut short, extended or replaced while the broker
// was stopped would otherwise be trusted (an append past its end leaves a hole of
// zeros); the log is marked damaged (ErrLogDamaged, sticky) for its owner to reopen
// from its files. The first open clears describedBy once the indexes are open too
// (describedFileMissing).
func (s *segment) checkDescribedSize(f *os.File) error {
	if s.describedBy == nil {
		return nil
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	return s.checkSize(f.Name(), st.Size())
}

// describedFileMissing is err, the failure to open a file of a segment l described (nil
// when none): the .log, or an index the description says holds entries. A file deleted
// while the broker was stopped marks the log damaged (ErrLogDamaged), not failed (which
// would take the whole log directory offline), and an index is not created empty, so
// that the log's reopening from its files rebuilds it (an empty one would be trusted,
// every lookup a scan of the segment). Every described segment had its files: a
// description of a log whose active segment has none yet is never made.
func describedFileMissing(l *Log, err error) error {
	if l == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return l.setFailure(fmt.Errorf("%w: %w", ErrLogDamaged, err))
}

// DescribedFile is the .log file of a segment not yet opened since its log was built
// from its clean-shutdown description (Log.UncheckedFiles).
type DescribedFile struct {
	BaseOffset int64
	Path       string
}

// UncheckedFiles returns the .log files of the segments built from the log's
// clean-shutdown description that have not been opened yet (checkDescribedSize): for
// the owner to stat outside its lock and hand back to CheckFileSize, so that damage is
// found without waiting for a file's first use.
func (l *Log) UncheckedFiles() []DescribedFile {
	var out []DescribedFile
	for _, s := range l.segments {
		if s.describedBy != nil {
			out = append(out, DescribedFile{BaseOffset: s.baseOffset, Path: segmentPath(s.dir, s.baseOffset, LogFileSuffix)})
		}
	}
	return out
}

// CheckFileSize compares size, the size of f's file as the owner found it
// (UncheckedFiles; -1 for a missing file), with the size the description names for
// its segment, if not yet opened: a difference marks the log damaged and returns the
// failure (ErrLogDamaged); a match changes nothing (the first open still checks the
// indexes). A segment opened or removed meanwhile is left alone.
func (l *Log) CheckFileSize(f DescribedFile, size int64) error {
	if s := l.describedSegment(f.BaseOffset); s != nil {
		return s.checkSize(f.Path, size)
	}
	return nil
}

// CheckSegmentFiles runs the first open's checks (checkDescribedSize,
// describedFileMissing) on the segment at baseOffset when the log was opened from its
// description and the segment has not been opened since, and returns the log's sticky
// failure: for an owner about to read a segment's files without the Log (tiered
// storage's copy links them).
func (l *Log) CheckSegmentFiles(baseOffset int64) error {
	defer l.release()
	if s := l.describedSegment(baseOffset); s != nil {
		if err := s.use(); err != nil && l.failure == nil {
			return err
		}
	}
	return l.failure
}

// describedSegment is the segment at baseOffset if it has not been opened since the
// log was built from its description, else nil.
func (l *Log) describedSegment(baseOffset int64) *segment {
	i, found := slices.BinarySearchFunc(l.segments, baseOffset, func(s *segment, base int64) int { return cmp.Compare(s.baseOffset, base) })
	if !found || l.segments[i].describedBy == nil {
		return nil
	}
	return l.segments[i]
}

// checkSize compares size, that of the .log file at path, with the size s's log's
// description names: a difference marks the log damaged.
func (s *segment) checkSize(path string, size int64) error {
	if size < 0 {
		return s.describedBy.setFailure(fmt.Errorf("%w: %s is missing, the clean shutdown left %d bytes", ErrLogDamaged, path, s.size))
	}
	if size != s.size {
		return s.describedBy.setFailure(fmt.Errorf("%w: %s is %d bytes, the clean shutdown left %d", ErrLogDamaged, path, size, s.size))
	}
	return nil
}

// closedIndex is an index of n entries whose file is closed: writable (mapped for
// appends on attach) in the active segment.
func closedIndex(dir string, base int64, entrySize int, cfg Config, n int, writable bool) *indexFile {
	return &indexFile{dir: dir, base: base, entrySize: entrySize, maxEntries: cfg.maxIndexEntries(entrySize),
		entries: n, written: n, fileSize: int64(n * entrySize), writable: writable}
}
