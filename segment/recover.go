package segment

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// RecoveryReport says what Open found and changed.
type RecoveryReport struct {
	// SegmentsLoaded counts every segment opened.
	SegmentsLoaded int
	// SegmentsOpened counts the segments whose files Open opened: after a clean
	// shutdown an empty active segment is loaded without (its files open on first use).
	SegmentsOpened int
	// SegmentsRecovered counts segments scanned batch by batch with CRC checks.
	SegmentsRecovered int
	// IndexesRebuilt lists the base offsets of segments whose indexes were rebuilt.
	IndexesRebuilt []int64
	// Cut is set when invalid or torn data was cut from the log.
	Cut *RecoveryCut
	// DeletedSegments lists base offsets of segments deleted because they followed a cut
	// or held nothing.
	DeletedSegments []int64
	// RemovedFiles lists leftover files removed (temporary, .deleted, orphan indexes).
	RemovedFiles []string
	// SwapsCompleted lists the base offsets of cleaned segments whose interrupted swap
	// Open completed (clean_swap.go).
	SwapsCompleted []int64
	// LeaderEpochsRebuilt is set when leader-epoch-checkpoint was missing or corrupt and
	// was rebuilt from batch headers.
	LeaderEpochsRebuilt bool
	// FromShutdownState is set when the log was built from OpenOptions.ShutdownState, its
	// directory not read.
	FromShutdownState bool
}

// RecoveryCut describes where recovery cut the log.
type RecoveryCut struct {
	SegmentBaseOffset int64 // segment that was cut
	Position          int64 // byte position of the cut in its .log
	Offset            int64 // log end offset after the cut
	TruncatedBytes    int64 // bytes removed from that segment (later segments not counted)
	Reason            error // why the first removed batch was rejected
}

// Open opens the partition directory dir and recovers it. A missing dir is an empty
// log, whose directory is made by its first file (makeDir).
func Open(dir string, cfg Config, opts OpenOptions) (*Log, *RecoveryReport, error) {
	// One listing serves the whole open (segments, leftovers, which checkpoint files
	// exist) and, through TakeOpenListing, the owner's producer snapshots. A missing
	// directory is not made here: the log makes it when it first writes a file in it
	// (makeDir), so a replica that never holds a record costs no inode.
	if opts.CleanShutdown && opts.ShutdownState != nil {
		if l, report, ok := openFromShutdownState(dir, cfg, opts); ok {
			return l, report, nil
		}
	}
	var ents []os.DirEntry
	var err error
	absent := opts.DirAbsent
	if !absent {
		ents, err = os.ReadDir(dir)
		absent = errors.Is(err, os.ErrNotExist)
		if err != nil && !absent {
			return nil, nil, err
		}
	}
	l := newLog(dir, cfg, opts)
	l.dirAbsent = absent
	defer l.release()
	report := &RecoveryReport{}
	if slices.ContainsFunc(ents, func(e os.DirEntry) bool { return strings.HasSuffix(e.Name(), SwapFileSuffix) }) {
		if err := completeSwaps(dir, ents, report); err != nil {
			return nil, nil, err
		}
		if ents, err = os.ReadDir(dir); err != nil {
			return nil, nil, err
		}
	}
	bases, err := scanDir(dir, ents, report)
	if err != nil {
		return nil, nil, err
	}
	l.openNames = otherFileNames(ents)
	txnIndexAbsent := !slices.ContainsFunc(ents, func(e os.DirEntry) bool { return strings.HasSuffix(e.Name(), TxnIndexFileSuffix) })
	epochs, epochErr := &LeaderEpochCache{dir: dir, missing: true}, error(nil)
	if slices.Contains(l.openNames, LeaderEpochCheckpointFile) { // else nothing to read
		epochs, epochErr = openLeaderEpochCache(dir)
	}
	epochs.log = l
	l.epochs = epochs
	rebuildEpochs := epochErr != nil
	if epochErr != nil && !errors.Is(epochErr, ErrCorruptCheckpoint) {
		return nil, nil, epochErr
	}
	if epochs.missing && len(bases) > 0 {
		rebuildEpochs = true
	}
	if rebuildEpochs {
		epochs.entries = nil
		report.LeaderEpochsRebuilt = true
	}
	if err := l.loadSegments(bases, ents, opts, rebuildEpochs, report); err != nil {
		l.closeFiles()
		return nil, nil, err
	}
	if err := l.finishOpen(opts, report); err != nil {
		l.closeFiles()
		return nil, nil, err
	}
	l.release()
	for _, s := range l.segments {
		l.files.closeUnused(s) // opened on first use
	}
	// A removal may have changed the listing, and a truncation at the open (finishOpen)
	// has cleared it.
	l.openNamesSet = len(report.RemovedFiles) == 0 && l.generation == 0
	l.txnIndexAbsent = txnIndexAbsent
	if !l.openNamesSet {
		l.openNames = nil
	}
	return l, report, nil
}

// newLog is the Log Open fills in.
func newLog(dir string, cfg Config, opts OpenOptions) *Log {
	if opts.Files == nil {
		opts.Files = testFiles
	}
	l := &Log{dir: dir, cfg: cfg, now: opts.Now, decompress: opts.Decompress, files: opts.Files, highestCopiedOffset: -1}
	if l.now == nil {
		l.now = time.Now
	}
	l.lastFlush = l.now()
	return l
}

// openFromShutdownState is Open of a log built from opts.ShutdownState; ok is false when the
// description does not fit (openShutdownState) or settling the log start would fail, and
// the caller opens the log from its files.
func openFromShutdownState(dir string, cfg Config, opts OpenOptions) (*Log, *RecoveryReport, bool) {
	l := newLog(dir, cfg, opts)
	defer l.release()
	if !l.openShutdownState(opts.ShutdownState, opts) {
		return nil, nil, false
	}
	report := &RecoveryReport{SegmentsLoaded: len(l.segments), FromShutdownState: true}
	if err := l.finishOpen(opts, report); err != nil {
		l.closeFiles()
		return nil, nil, false
	}
	return l, report, true
}

// otherFileNames lists the files of a partition directory that are not segment files
// (checkpoints, producer snapshots, partition.metadata), for the rest of the open and for
// the log's owner (TakeOpenListing).
func otherFileNames(ents []os.DirEntry) []string {
	var names []string
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		switch _, suffix, ok := parseSegmentFileName(e.Name()); {
		case ok && (suffix == LogFileSuffix || suffix == IndexFileSuffix || suffix == TimeIndexFileSuffix || suffix == TxnIndexFileSuffix):
		default:
			names = append(names, e.Name())
		}
	}
	return names
}

// TakeOpenListing returns, once, the names of the files other than segment files that
// Open found in the partition directory (a producer snapshot's owner lists them from it
// instead of listing the directory again); ok is false on later calls, after any write
// to the log, and when Open removed leftover files.
func (l *Log) TakeOpenListing() (names []string, ok bool) {
	names, ok = l.openNames, l.openNamesSet
	l.openNames, l.openNamesSet = nil, false
	return names, ok
}

// scanDir removes leftover files and returns the base offsets of the .log files, sorted.
func scanDir(dir string, ents []os.DirEntry, report *RecoveryReport) ([]int64, error) {
	logs := map[int64]bool{}
	var indexes []string
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		if strings.HasSuffix(name, checkpointTempSuffix) || strings.HasSuffix(name, DeletedFileSuffix) || strings.HasSuffix(name, CleanedFileSuffix) ||
			strings.HasSuffix(name, SwapEndFileSuffix) {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return nil, err
			}
			report.RemovedFiles = append(report.RemovedFiles, name)
			continue
		}
		base, suffix, ok := parseSegmentFileName(name)
		if !ok {
			continue
		}
		switch suffix {
		case LogFileSuffix:
			logs[base] = true
		case IndexFileSuffix, TimeIndexFileSuffix, TxnIndexFileSuffix:
			indexes = append(indexes, name)
		}
	}
	for _, name := range indexes {
		if base, _, _ := parseSegmentFileName(name); !logs[base] {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return nil, err
			}
			report.RemovedFiles = append(report.RemovedFiles, name)
		}
	}
	bases := make([]int64, 0, len(logs))
	for b := range logs {
		bases = append(bases, b)
	}
	slices.Sort(bases)
	return bases, nil
}

// loadSegments opens every segment (ents is the directory's listing). Trusted segments (wholly below the recovery point, or
// all after a clean shutdown) get a size check; the rest are recovered. The first cut
// deletes every later segment.
func (l *Log) loadSegments(bases []int64, ents []os.DirEntry, opts OpenOptions, rebuildEpochs bool, report *RecoveryReport) error {
	for i, base := range bases {
		last := i == len(bases)-1
		if last && opts.CleanShutdown && l.files != nil {
			// An empty active segment of a cleanly closed log: nothing to load, so its
			// files are not even opened (restart of many idle replicas).
			if s, ok := closedEmptySegment(l.dir, base, l.cfg, ents); ok {
				s.c, s.pins = l.files, &l.held // in the cache's care, not open
				l.segments = append(l.segments, s)
				report.SegmentsLoaded++
				break
			}
		}
		// After a clean shutdown the active segment's indexes are opened as they were
		// left (holding their entries) and mapped writable on first use, not now.
		s, err := openSegmentFiles(l.dir, base, l.cfg, last && !(opts.CleanShutdown && l.files != nil))
		if err != nil {
			return err
		}
		l.track(s)
		report.SegmentsOpened++
		l.segments = append(l.segments, s)
		report.SegmentsLoaded++
		trusted := opts.CleanShutdown || (!last && bases[i+1] <= opts.RecoveryPoint)
		expectNext := int64(-1)
		if !last {
			expectNext = bases[i+1]
		}
		cut := false
		if !trusted || !l.loadTrusted(s, expectNext, report) {
			report.SegmentsRecovered++
			if cut, err = l.recoverSegment(s, report); err != nil {
				return err
			}
		}
		if rebuildEpochs {
			if err := l.assignEpochsFrom(s); err != nil {
				return err
			}
		}
		if !cut && !last && (s.nextOffset > bases[i+1] || !l.cfg.Compacted && s.nextOffset != bases[i+1]) {
			// A gap or overlap between segments: cut here, at the end of this one. (In a
			// compacted log a gap is what cleaning leaves when it removes a segment's
			// last batches.)
			report.Cut = &RecoveryCut{SegmentBaseOffset: base, Position: s.size, Offset: s.nextOffset,
				Reason: fmt.Errorf("%w: segment ends at offset %d, next segment starts at %d", ErrInvalidBatch, s.nextOffset, bases[i+1])}
			cut = true
		}
		if cut && !last {
			for _, later := range bases[i+1:] {
				if err := removeSegmentFiles(l.dir, later); err != nil {
					return err
				}
				report.DeletedSegments = append(report.DeletedSegments, later)
			}
			break
		}
	}
	// Segments left empty by a cut, other than the last, are dropped.
	for len(l.segments) > 1 && l.active().size == 0 {
		s := l.active()
		l.segments = l.segments[:len(l.segments)-1]
		report.DeletedSegments = append(report.DeletedSegments, s.baseOffset)
		if err := s.remove(); err != nil {
			return err
		}
	}
	for i, s := range l.segments {
		var err error
		if i < len(l.segments)-1 {
			err = s.seal()
			if err != nil {
				return err
			}
			continue
		}
		if !s.offsetIndex.writable && opts.CleanShutdown && l.files != nil {
			// Opened sealed above (entries loadTrusted dropped are already cut off the
			// files): closed now, mapped writable on first use.
			l.release()
			l.files.closeUnused(s)
		}
		err = s.unseal()
		if err != nil {
			return err
		}
	}
	return nil
}

// loadTrusted loads a trusted segment from its indexes and a header scan of its tail. It
// returns false when the indexes or the framing are wrong and the segment must be
// recovered instead.
func (l *Log) loadTrusted(s *segment, expectNext int64, report *RecoveryReport) bool {
	if s.use() != nil {
		return false
	}
	n, clean := s.offsetIndex.validPrefix(s.size)
	if !clean || (s.indexesMissing && s.size > 0) {
		return false
	}
	if s.offsetIndex.truncateEntries(n) != nil {
		return false // recovery truncates it again, and fails the open if it cannot
	}
	tn, tclean := s.timeIndex.validPrefix(1<<63 - 1)
	if !tclean || s.timeIndex.truncateEntries(tn) != nil {
		return false
	}
	if err := s.loadTail(l.cfg.IndexIntervalBytes, l.cfg.Compacted); err != nil {
		return false
	}
	// The last time index entry gives the segment's max timestamp (retention, ListOffsets).
	if last, ok := s.timeIndex.last(); ok && (last.offset >= s.nextOffset || !s.timeEntryValid(last)) {
		return false
	}
	if expectNext >= 0 && (s.nextOffset > expectNext || !l.cfg.Compacted && s.nextOffset != expectNext) {
		return false
	}
	return true
}

// recoverSegment scans every batch with CRC checks, rebuilds both indexes, and cuts the
// segment at the first invalid or torn batch. It reports whether it cut.
func (l *Log) recoverSegment(s *segment, report *RecoveryReport) (bool, error) {
	report.IndexesRebuilt = append(report.IndexesRebuilt, s.baseOffset)
	if err := s.use(); err != nil {
		return false, err
	}
	// What a crashed process wrote may be in the page cache only: it counts as
	// unsynced, so Open's fsync below the new recovery point covers it.
	s.dirty, s.offsetIndex.unsynced, s.timeIndex.unsynced = true, true, true
	if err := s.offsetIndex.unseal(); err != nil {
		return false, err
	}
	if err := s.timeIndex.unseal(); err != nil {
		return false, err
	}
	// The old entries are cut off the files (ftruncate), never overwritten with zeros:
	// the rebuilt ones are written with one pwrite per index below.
	if err := s.offsetIndex.truncateEntries(0); err != nil {
		return false, err
	}
	if err := s.timeIndex.truncateEntries(0); err != nil {
		return false, err
	}
	fileSize := s.size
	s.size, s.nextOffset = 0, s.baseOffset
	s.maxTimestamp, s.offsetOfMaxTimestamp, s.firstBatchTimestamp = -1, -1, -1
	s.bytesSinceLastIndexEntry = 0

	var buf []byte
	var reason error
	for s.size < fileSize {
		pos := s.size
		h, err := readBatchAt(s.log, pos, fileSize, &buf, l.cfg.Compacted)
		if err == nil && (h.BaseOffset < s.nextOffset || !l.cfg.Compacted && h.BaseOffset != s.nextOffset) {
			err = fmt.Errorf("%w: batch at position %d starts at offset %d, expected %d", ErrInvalidBatch, pos, h.BaseOffset, s.nextOffset)
		}
		if err == nil && h.LastOffset()-s.baseOffset > 1<<31-1 {
			err = fmt.Errorf("%w: batch at position %d has offsets beyond the segment's 32-bit range", ErrInvalidBatch, pos)
		}
		if err != nil {
			reason = err
			break
		}
		s.size = pos // indexBatch advances it
		s.indexBatch(h, pos, l.cfg.IndexIntervalBytes)
	}
	if err := s.flushIndexes(); err != nil {
		return false, err
	}
	if reason == nil {
		return false, nil
	}
	report.Cut = &RecoveryCut{SegmentBaseOffset: s.baseOffset, Position: s.size, Offset: s.nextOffset,
		TruncatedBytes: fileSize - s.size, Reason: reason}
	if err := s.log.Truncate(s.size); err != nil {
		return true, err
	}
	if err := s.truncateTxnIndex(s.nextOffset); err != nil {
		return true, err
	}
	return true, s.sync()
}

// readBatchAt reads and validates the whole batch at pos of a file of fileSize bytes,
// reusing *buf.
func readBatchAt(f *os.File, pos, fileSize int64, buf *[]byte, compacted bool) (BatchHeader, error) {
	if fileSize-pos < BatchHeaderSize {
		return BatchHeader{}, fmt.Errorf("%w: %d bytes at position %d, short of a batch header", io.ErrUnexpectedEOF, fileSize-pos, pos)
	}
	if cap(*buf) < BatchHeaderSize {
		*buf = make([]byte, 64<<10)
	}
	hb := (*buf)[:BatchHeaderSize]
	if _, err := f.ReadAt(hb, pos); err != nil {
		return BatchHeader{}, err
	}
	h, err := ParseBatchHeader(hb)
	if err != nil {
		return h, fmt.Errorf("batch at position %d: %w", pos, err)
	}
	if h.Size() > fileSize-pos {
		return h, fmt.Errorf("%w: batch at position %d needs %d bytes, %d remain", io.ErrUnexpectedEOF, pos, h.Size(), fileSize-pos)
	}
	if int64(cap(*buf)) < h.Size() {
		*buf = make([]byte, h.Size())
	}
	b := (*buf)[:h.Size()]
	if _, err := f.ReadAt(b, pos); err != nil {
		return h, err
	}
	if _, err := validateBatch(b, compacted); err != nil {
		return h, fmt.Errorf("batch at position %d: %w", pos, err)
	}
	return h, nil
}

// assignEpochsFrom adds the leader epochs of s's batches to the epoch cache (used when
// leader-epoch-checkpoint is rebuilt from batch headers).
func (l *Log) assignEpochsFrom(s *segment) error {
	var hb [BatchHeaderSize]byte
	for pos := int64(0); pos < s.size; {
		h, err := s.readHeaderAt(pos, &hb)
		if err != nil {
			return err
		}
		if h.PartitionLeaderEpoch > l.epochs.LatestEpoch() {
			if err := l.epochs.Assign(h.PartitionLeaderEpoch, h.BaseOffset); err != nil {
				return err
			}
		}
		pos += h.Size()
	}
	return nil
}

// finishOpen creates the first segment of an empty log, settles the log start offset
// and recovery point, and trims the leader epoch cache to the log.
func (l *Log) finishOpen(opts OpenOptions, report *RecoveryReport) error {
	if len(l.segments) == 0 && l.files != nil {
		// No segment file at all (scanDir removed any orphan index): a new log, or one
		// never written to. Its files are created on first use.
		s := unbornSegment(l.dir, max(opts.LogStartOffset, 0), l.cfg, l.now())
		s.c, s.pins = l.files, &l.held // in the cache's care, not open
		l.segments = []*segment{s}
	}
	if len(l.segments) == 0 { // no file cache (tests of the bare segment layer)
		if err := l.makeDirDurable(); err != nil {
			return err
		}
		s, err := createSegment(l.dir, max(opts.LogStartOffset, 0), l.cfg, l.now())
		if err != nil {
			return err
		}
		l.segments = []*segment{l.track(s)}
	}
	l.localLogStartOffset = max(opts.LogStartOffset, l.segments[0].baseOffset)
	if l.localLogStartOffset > l.LogEndOffset() {
		// The log start moved past data that is gone (for example a crash during
		// TruncateFullyAndStartAt): start empty there, as Kafka does.
		if err := l.TruncateFullyAndStartAt(l.localLogStartOffset); err != nil {
			return err
		}
	}
	l.logStartOffset = l.localLogStartOffset
	if l.cfg.RemoteStorageEnable {
		// The checkpointed log start may lie below the local segments: the part between
		// is in remote storage (Kafka's LogLoader keeps the checkpoint then).
		l.logStartOffset = min(max(opts.LogStartOffset, 0), l.localLogStartOffset)
	}
	l.recoveryPoint = l.LogEndOffset()
	if report.SegmentsRecovered > 0 {
		for _, s := range l.segments { // the recovered ones: the rest have nothing unsynced
			if err := s.sync(); err != nil {
				return err
			}
		}
	}
	l.epochs.truncateEndAtOpen(l.LogEndOffset())
	return l.epochs.TruncateFromStart(l.logStartOffset)
}

func removeSegmentFiles(dir string, base int64) error {
	return removeFiles(dir, base, LogFileSuffix, IndexFileSuffix, TimeIndexFileSuffix, TxnIndexFileSuffix)
}

// removeFiles deletes the files of segment base with the given suffixes.
func removeFiles(dir string, base int64, suffixes ...string) error {
	for _, suffix := range suffixes {
		if err := os.Remove(segmentPath(dir, base, suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
