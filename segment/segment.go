package segment

import (
	"container/list"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// segment is one .log file with its .index and .timeindex. Not safe for concurrent use.
//
// With a FileCache the files may be closed while the segment is not in use: log and the
// indexes' files and mappings are then nil, and every method that touches them calls use
// first (use pins the segment until the Log's call ends). Everything else (sizes, entry
// counts, offsets) stays in the struct.
type segment struct {
	baseOffset  int64
	dir         string
	log         *os.File // nil while the cache has the files closed
	logRef      *fileRef // counts Holds on log; closeLog drops the segment's own reference
	size        int64    // bytes in .log
	offsetIndex offsetIndex
	timeIndex   timeIndex
	nextOffset  int64 // offset after the last batch; baseOffset when empty

	maxTimestamp         int64 // largest batch maxTimestamp; -1 when none
	offsetOfMaxTimestamp int64 // last offset of the batch holding maxTimestamp
	firstBatchTimestamp  int64 // maxTimestamp of the first batch, for segment.ms; -1 when empty
	created              time.Time

	// bytesSinceLastIndexEntry counts bytes appended since the last offset index entry.
	bytesSinceLastIndexEntry int
	// indexesMissing is set when an index file did not exist when the segment was opened.
	indexesMissing bool

	// The file cache's bookkeeping: c is nil without a cache. elem and refs are guarded
	// by c.mu; held, pins and dirty belong to the owner (dirty is read by the cache only
	// while refs is 0, after the owner's release).
	c         *FileCache
	elem      *list.Element // in c.lru while the files are open
	refs      int           // pins: the owner's current call, unreleased FileRanges
	forgotten bool          // closed or removed: the cache never touches it again
	held      bool          // pinned for the owner's current Log call
	pins      *[]*segment   // the owner Log's held list
	// dirty is set by writes and cleared by fsyncs: the cache closes such files last.
	dirty bool
	// txnDirty is set when the .txnindex was appended to since its last fsync
	// (txnindex.go; the file is opened only for the append and the fsync).
	txnDirty bool
	// txnCreated is set when an append created the .txnindex after the segment's own
	// directory fsync, until SyncTxnIndex or a roll fsyncs the directory.
	txnCreated bool
	// unborn is set while the files of a new log's empty active segment do not exist
	// (unbornSegment): the first attach creates them. Owner only.
	unborn bool
	// describedBy is the Log whose clean-shutdown description (openShutdownState) gave
	// the segment its size and index entries, until the first attach has checked its
	// files against them (checkDescribedSize, describedFileMissing). Owner only.
	describedBy *Log
	// last is the last batch indexBatch accounted for, nil until the first (an idle
	// replica's segments pay a pointer for it); tailBatch trusts it only while it ends
	// at size and nextOffset.
	last *lastBatch
}

// lastBatch is a segment's last batch and its position: a read at the end of the log
// (a follower fetching what was just appended) starts there without reading headers.
type lastBatch struct {
	pos int64
	h   BatchHeader
}

// use makes sure the segment's files are open and pins it until its Log's current call
// ends (Log.release).
func (s *segment) use() error {
	if s.held || s.c == nil {
		return nil
	}
	if err := s.c.acquire(s); err != nil {
		return fmt.Errorf("opening segment %d: %w", s.baseOffset, err)
	}
	s.held = true
	*s.pins = append(*s.pins, s)
	return nil
}

// track enters a segment whose files were just opened into the Log's file cache, pinned
// for the current call.
func (l *Log) track(s *segment) *segment {
	s.c, s.pins = l.files, &l.held
	if l.files != nil {
		l.files.adopt(s)
		s.held = true
		l.held = append(l.held, s)
	}
	return s
}

// release unpins the segments the current Log call used.
func (l *Log) release() {
	for i, s := range l.held {
		s.held = false
		l.files.release(s)
		l.held[i] = nil
	}
	l.held = l.held[:0]
}

// attach reopens the files of a segment the cache closed. Sizes and entry counts are
// the segment's own; the files are only mapped again.
func (s *segment) attach() error {
	flags := os.O_RDWR
	if s.unborn {
		flags |= os.O_CREATE
	}
	f, err := OpenFile(segmentPath(s.dir, s.baseOffset, LogFileSuffix), flags, 0o644)
	if s.unborn && errors.Is(err, os.ErrNotExist) {
		// The log's directory is still to be made (Log.makeDir): its name is fsynced below.
		if err = os.MkdirAll(s.dir, 0o755); err == nil {
			f, err = OpenFile(segmentPath(s.dir, s.baseOffset, LogFileSuffix), flags, 0o644)
		}
	}
	if err != nil {
		return describedFileMissing(s.describedBy, err)
	}
	described := s.describedBy
	if err := s.checkDescribedSize(f); err != nil {
		f.Close()
		return err
	}
	// A described index with entries must still exist (describedFileMissing).
	if err := s.offsetIndex.attach(described != nil && s.offsetIndex.written > 0); err != nil {
		f.Close()
		return describedFileMissing(described, err)
	}
	if err := s.timeIndex.attach(described != nil && s.timeIndex.written > 0); err != nil {
		s.offsetIndex.detach()
		f.Close()
		return describedFileMissing(described, err)
	}
	s.describedBy = nil // the files are the described ones
	if s.unborn {
		// The files were just created: their names in the partition directory, and the
		// directory's own name in the log directory, are made durable before anything
		// is written to them (an fsynced append must not vanish with its file).
		err := syncDir(s.dir)
		if err == nil {
			err = syncDir(filepath.Dir(s.dir))
		}
		if err != nil {
			s.timeIndex.detach()
			s.offsetIndex.detach()
			f.Close()
			return err
		}
		s.unborn = false
	}
	s.log, s.logRef = f, newFileRef(f)
	return nil
}

// detach closes the segment's files and mappings, keeping its state (the cache evicting
// it).
func (s *segment) detach() {
	if s.log != nil {
		s.closeLog() // a Hold still sending keeps the old descriptor until it is released
		s.log = nil
	}
	s.offsetIndex.detach()
	s.timeIndex.detach()
}

// createSegment creates an empty, active segment at baseOffset. An empty leftover .log of
// the same name is reused; a non-empty one is an error, never overwritten.
func createSegment(dir string, baseOffset int64, cfg Config, now time.Time) (*segment, error) {
	path := segmentPath(dir, baseOffset, LogFileSuffix)
	if st, err := os.Stat(path); err == nil && st.Size() > 0 {
		return nil, fmt.Errorf("creating segment %s: a non-empty file exists", path)
	}
	for _, suffix := range []string{IndexFileSuffix, TimeIndexFileSuffix, TxnIndexFileSuffix} {
		if err := os.Remove(segmentPath(dir, baseOffset, suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	s, err := openSegmentFiles(dir, baseOffset, cfg, true)
	if err != nil {
		return nil, err
	}
	s.created = now
	if err := syncDir(dir); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// openSegmentFiles opens (creating when missing) a segment's three files without reading
// them. The caller loads or recovers the segment's state.
func openSegmentFiles(dir string, baseOffset int64, cfg Config, active bool) (*segment, error) {
	f, err := OpenFile(segmentPath(dir, baseOffset, LogFileSuffix), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	oi, oiCreated, err := openIndexFile(dir, baseOffset, IndexFileSuffix, offsetIndexEntrySize, cfg.maxIndexEntries(offsetIndexEntrySize), active)
	if err != nil {
		f.Close()
		return nil, err
	}
	ti, tiCreated, err := openIndexFile(dir, baseOffset, TimeIndexFileSuffix, timeIndexEntrySize, cfg.maxIndexEntries(timeIndexEntrySize), active)
	if err != nil {
		oi.close()
		f.Close()
		return nil, err
	}
	return &segment{
		baseOffset:           baseOffset,
		dir:                  dir,
		log:                  f,
		logRef:               newFileRef(f),
		size:                 st.Size(),
		offsetIndex:          offsetIndex{oi, baseOffset},
		timeIndex:            timeIndex{ti, baseOffset},
		nextOffset:           baseOffset,
		maxTimestamp:         -1,
		offsetOfMaxTimestamp: -1,
		firstBatchTimestamp:  -1,
		created:              st.ModTime(),
		indexesMissing:       oiCreated || tiCreated,
	}, nil
}

// closedEmptySegment describes the empty active segment base of a log closed cleanly
// without opening its files: size (0) and creation time come from a stat of the .log,
// and the indexes, trimmed to no entries at the clean close (or missing), are marked
// writable so that the first use (attach) maps them for appends. Only a Log with a
// FileCache has segments whose files are closed. The bool is false when the .log or an
// index is not empty (or the .log cannot be stat'ed): the caller then opens the segment
// as usual.
func closedEmptySegment(dir string, base int64, cfg Config, ents []os.DirEntry) (*segment, bool) {
	st, err := os.Stat(segmentPath(dir, base, LogFileSuffix))
	if err != nil || st.Size() != 0 {
		return nil, false
	}
	for _, suffix := range []string{IndexFileSuffix, TimeIndexFileSuffix} {
		// Entries in an empty segment's index would be stale: opened as usual, they are
		// validated and dropped. An index the listing ents does not hold is not stat'ed.
		name := segmentFileName(base, suffix)
		if !slices.ContainsFunc(ents, func(e os.DirEntry) bool { return e.Name() == name }) {
			continue
		}
		if ist, err := os.Stat(segmentPath(dir, base, suffix)); err == nil && ist.Size() != 0 {
			return nil, false
		}
	}
	return emptyIdleSegment(dir, base, cfg, st.ModTime()), true
}

// emptyIdleSegment is an empty segment whose files are not open (or do not exist yet),
// created at created.
func emptyIdleSegment(dir string, base int64, cfg Config, created time.Time) *segment {
	return &segment{
		baseOffset:           base,
		dir:                  dir,
		offsetIndex:          offsetIndex{closedIndex(dir, base, offsetIndexEntrySize, cfg, 0, true), base},
		timeIndex:            timeIndex{closedIndex(dir, base, timeIndexEntrySize, cfg, 0, true), base},
		nextOffset:           base,
		maxTimestamp:         -1,
		offsetOfMaxTimestamp: -1,
		firstBatchTimestamp:  -1,
		created:              created,
	}
}

// unbornSegment is the empty active segment of a log that Open has just created, with no
// file yet: its first use (attach, through the file cache) creates the .log and both
// indexes and fsyncs the partition directory and its parent, as Kafka creates a new
// log's index files lazily and fsyncs the directory with the first flush of a new
// segment. Creating many partitions thus costs a directory each, not three mapped files
// and a directory fsync each; a replica that is never written to keeps
// no segment file at all.
func unbornSegment(dir string, base int64, cfg Config, now time.Time) *segment {
	s := emptyIdleSegment(dir, base, cfg, now)
	s.unborn = true
	return s
}

// testHookHeaderRead, when set by a test, runs for every header readHeaderAt reads.
var testHookHeaderRead func()

// readHeaderAt reads the batch header at pos. It returns io.ErrUnexpectedEOF when fewer
// than a header's bytes remain, and an error when the header is invalid or its batch runs
// past the end of the file.
func (s *segment) readHeaderAt(pos int64, buf *[BatchHeaderSize]byte) (BatchHeader, error) {
	if s.size-pos < BatchHeaderSize {
		return BatchHeader{}, io.ErrUnexpectedEOF
	}
	if err := s.use(); err != nil {
		return BatchHeader{}, err
	}
	return s.readHeaderFrom(s.log, pos, buf)
}

// readHeaderFrom is readHeaderAt reading f, the segment's .log file through this or
// another descriptor.
func (s *segment) readHeaderFrom(f *os.File, pos int64, buf *[BatchHeaderSize]byte) (BatchHeader, error) {
	if s.size-pos < BatchHeaderSize {
		return BatchHeader{}, io.ErrUnexpectedEOF
	}
	if testHookHeaderRead != nil {
		testHookHeaderRead()
	}
	if _, err := f.ReadAt(buf[:], pos); err != nil {
		return BatchHeader{}, err
	}
	h, err := ParseBatchHeader(buf[:])
	if err != nil {
		return h, err
	}
	if pos+h.Size() > s.size {
		return h, fmt.Errorf("%w: batch at position %d of size %d runs past the end of the %d-byte segment", io.ErrUnexpectedEOF, pos, h.Size(), s.size)
	}
	if h.Control() {
		var rec [controlRecordPrefix]byte
		n := min(int64(len(rec)), h.Size()-BatchHeaderSize)
		if _, err := f.ReadAt(rec[:n], pos+BatchHeaderSize); err != nil {
			return h, err
		}
		h.ControlType, h.ControlCoordinatorEpoch = controlRecord(rec[:n])
	}
	return h, nil
}

// appendBatches writes buf, already validated and stamped, to the end of the segment and
// maintains the indexes batch by batch.
func (s *segment) appendBatches(buf []byte, indexIntervalBytes int) error {
	if err := s.use(); err != nil {
		return err
	}
	s.dirty = true
	if _, err := s.log.WriteAt(buf, s.size); err != nil {
		return err
	}
	before := s.tailState()
	pos := s.size
	for off := 0; off < len(buf); {
		h, _ := ParseBatchHeader(buf[off:]) // validated by the caller
		s.indexBatch(h, pos, indexIntervalBytes)
		pos += h.Size()
		off += int(h.Size())
	}
	if err := s.flushIndexes(); err != nil {
		// The index entries could not be written (ENOSPC): the append did not happen,
		// as when the .log write fails. Its bytes are cut off again where the file
		// system lets us (shrinking needs no space); recovery cuts them otherwise.
		s.restoreTail(before)
		_ = s.log.Truncate(s.size)
		return err
	}
	return nil
}

// segmentTail is what an append changes in a segment, for undoing a failed one.
type segmentTail struct {
	size, nextOffset, maxTimestamp, offsetOfMaxTimestamp, firstBatchTimestamp int64
	bytesSinceLastIndexEntry, offsetEntries, timeEntries                      int
	last                                                                      lastBatch
	hadLast                                                                   bool
}

func (s *segment) tailState() segmentTail {
	t := segmentTail{size: s.size, nextOffset: s.nextOffset, maxTimestamp: s.maxTimestamp,
		offsetOfMaxTimestamp: s.offsetOfMaxTimestamp, firstBatchTimestamp: s.firstBatchTimestamp,
		bytesSinceLastIndexEntry: s.bytesSinceLastIndexEntry,
		offsetEntries:            s.offsetIndex.entries, timeEntries: s.timeIndex.entries}
	if s.last != nil {
		t.last, t.hadLast = *s.last, true
	}
	return t
}

// restoreTail undoes an append: the segment's state and index entries as in t. The
// dropped entries were never written, or only partly: the index files are cut back to
// their written entries (best effort; the log has failed).
func (s *segment) restoreTail(t segmentTail) {
	s.size, s.nextOffset, s.maxTimestamp = t.size, t.nextOffset, t.maxTimestamp
	s.offsetOfMaxTimestamp, s.firstBatchTimestamp = t.offsetOfMaxTimestamp, t.firstBatchTimestamp
	s.bytesSinceLastIndexEntry = t.bytesSinceLastIndexEntry
	if t.hadLast {
		*s.last = t.last
	} else {
		s.last = nil
	}
	_ = s.offsetIndex.truncateEntries(t.offsetEntries)
	_ = s.timeIndex.truncateEntries(t.timeEntries)
}

// flushIndexes writes the index entries appended since the last flush (one pwrite per
// index). Every method that appends entries calls it before it returns; a failure (ENOSPC)
// is the caller's to turn into the log's sticky failure.
func (s *segment) flushIndexes() error {
	if err := s.offsetIndex.flush(); err != nil {
		return err
	}
	return s.timeIndex.flush()
}

// indexBatch accounts for the batch h at pos, which has just been appended or scanned:
// the next offset, timestamps and, per index.interval.bytes, index entries.
func (s *segment) indexBatch(h BatchHeader, pos int64, indexIntervalBytes int) {
	if pos == 0 {
		s.firstBatchTimestamp = h.MaxTimestamp
	}
	if h.MaxTimestamp > s.maxTimestamp {
		s.maxTimestamp = h.MaxTimestamp
		s.offsetOfMaxTimestamp = h.LastOffset()
	}
	// A full index skips entries (lookups scan a little further) rather than overflow:
	// one append call may carry more batches than the index has room for.
	if s.bytesSinceLastIndexEntry > indexIntervalBytes && !s.offsetIndex.full(1) && !s.timeIndex.full(2) {
		s.offsetIndex.append(h.LastOffset(), pos)
		s.timeIndex.maybeAppend(s.maxTimestamp, s.offsetOfMaxTimestamp)
		s.bytesSinceLastIndexEntry = 0
	}
	s.bytesSinceLastIndexEntry += int(h.Size())
	s.nextOffset = h.NextOffset()
	s.size = pos + h.Size()
	if s.last == nil {
		s.last = new(lastBatch)
	}
	s.last.pos, s.last.h = pos, h
	// As readHeaderAt, which reads the header alone, returns it: without the control
	// record's fields (ParseBatchHeader of a whole batch fills them in).
	s.last.h.ControlType, s.last.h.ControlCoordinatorEpoch = -1, -1
}

// tailBatch returns the segment's last batch when it holds offset (or is the first
// after it): what translateOffset would find, from memory. ok is false when offset is
// before that batch, past the segment, or the remembered batch no longer ends the
// segment (a truncation).
func (s *segment) tailBatch(offset int64) (pos int64, h BatchHeader, ok bool) {
	b := s.last
	if b == nil || offset < b.h.BaseOffset || offset >= s.nextOffset ||
		b.pos+b.h.Size() != s.size || b.h.NextOffset() != s.nextOffset {
		return 0, BatchHeader{}, false
	}
	return b.pos, b.h, true
}

// shouldRoll reports whether an append of size bytes in batches batches, offsets up to
// lastOffset and a largest timestamp maxTimestamp must go to a new segment (Kafka's
// LogSegment.shouldRoll).
func (s *segment) shouldRoll(cfg Config, size int64, batches int, lastOffset, maxTimestamp int64, now time.Time) bool {
	if s.size == 0 {
		return false
	}
	if s.size+size > cfg.SegmentBytes {
		return true
	}
	waited := now.Sub(s.created).Milliseconds()
	if s.firstBatchTimestamp >= 0 {
		waited = maxTimestamp - s.firstBatchTimestamp
	}
	if waited > cfg.SegmentMs {
		return true
	}
	// Room for an entry per batch; the time index keeps one more for the entry written
	// when the segment is sealed.
	if s.offsetIndex.full(batches) || s.timeIndex.full(batches+1) {
		return true
	}
	return lastOffset-s.baseOffset > math.MaxInt32
}

// translateOffset finds the first batch at or after the index entry for offset whose last
// offset is at least offset. ok is false when the segment holds no such batch.
func (s *segment) translateOffset(offset int64) (pos int64, h BatchHeader, ok bool, err error) {
	var buf [BatchHeaderSize]byte
	pos, h, known := s.indexedHeader(offset)
	for pos < s.size {
		if !known {
			if h, err = s.readHeaderAt(pos, &buf); err != nil {
				return pos, h, false, fmt.Errorf("segment %d at position %d: %w", s.baseOffset, pos, err)
			}
		}
		known = false
		if h.LastOffset() >= offset {
			return pos, h, true, nil
		}
		pos += h.Size()
	}
	return pos, h, false, nil
}

// A trusted segment's indexes are only checked for order (and their last entries against
// the .log) when loaded, so a damaged entry that still looks ordered can remain. Lookups
// therefore check the entry they use against the batch it names and fall back to the
// segment's start when they disagree: slower, never wrong.

// indexedPosition returns where a scan for offset may start: the position of the greatest
// offset index entry at or below offset when the batch there ends at the entry's offset,
// else 0.
func (s *segment) indexedPosition(offset int64) int64 {
	pos, _, _ := s.indexedHeader(offset)
	return pos
}

// indexedHeader is indexedPosition that also returns the header of the batch there,
// which it reads to check the entry; known is false when it returns 0 without one.
func (s *segment) indexedHeader(offset int64) (pos int64, h BatchHeader, known bool) {
	if s.use() != nil {
		return 0, h, false
	}
	e := s.offsetIndex.lookup(offset)
	if e.position == 0 {
		return 0, h, false
	}
	var buf [BatchHeaderSize]byte
	h, err := s.readHeaderAt(e.position, &buf)
	if err != nil || h.LastOffset() != e.offset {
		return 0, BatchHeader{}, false
	}
	return e.position, h, true
}

// timestampFloor returns the offset from which to search for the first record with a
// timestamp of at least ts: that of the greatest time index entry whose timestamp is at
// most ts when it checks out (timeEntryValid), else the segment's base offset.
func (s *segment) timestampFloor(ts int64) int64 {
	if s.use() != nil {
		return s.baseOffset
	}
	if e, ok := s.timeIndex.lookupEntry(ts); ok && s.timeEntryValid(e) {
		return e.offset
	}
	return s.baseOffset
}

// timeEntryValid reports whether the batch ending at e's offset has e's timestamp as its
// max timestamp, as the batch named by every time index entry has.
func (s *segment) timeEntryValid(e timestampOffset) bool {
	_, h, ok, err := s.translateOffset(e.offset)
	return err == nil && ok && h.LastOffset() == e.offset && h.MaxTimestamp == e.timestamp
}

// loadTail scans batch headers (no CRCs) from the last offset index entry to the end of
// the file to learn the next offset and the largest timestamp, using the indexes for the
// part before. It fails when the batches do not frame the file exactly.
func (s *segment) loadTail(indexIntervalBytes int, compacted bool) error {
	if err := s.use(); err != nil {
		return err
	}
	last := s.offsetIndex.last()
	s.maxTimestamp, s.offsetOfMaxTimestamp = -1, -1
	if ts, ok := s.timeIndex.last(); ok {
		s.maxTimestamp, s.offsetOfMaxTimestamp = ts.timestamp, ts.offset
	}
	var buf [BatchHeaderSize]byte
	if s.size > 0 {
		first, err := s.readHeaderAt(0, &buf)
		if err != nil {
			return err
		}
		if first.BaseOffset < s.baseOffset || !compacted && first.BaseOffset != s.baseOffset {
			return fmt.Errorf("%w: first batch has offset %d, below the segment base %d", ErrInvalidBatch, first.BaseOffset, s.baseOffset)
		}
		s.firstBatchTimestamp = first.MaxTimestamp
	}
	s.nextOffset = s.baseOffset
	if s.offsetIndex.entries > 0 {
		s.nextOffset = last.offset // the batch at last.position ends at last.offset
	}
	pos := last.position
	for pos < s.size {
		h, err := s.readHeaderAt(pos, &buf)
		if err != nil {
			return err
		}
		if (pos == last.position && s.offsetIndex.entries > 0 && h.LastOffset() != last.offset) ||
			(pos != last.position && (h.BaseOffset < s.nextOffset || !compacted && h.BaseOffset != s.nextOffset)) {
			return fmt.Errorf("%w: batch at position %d has offsets %d..%d, expected to follow %d", ErrInvalidBatch, pos, h.BaseOffset, h.LastOffset(), s.nextOffset)
		}
		if h.MaxTimestamp > s.maxTimestamp {
			s.maxTimestamp, s.offsetOfMaxTimestamp = h.MaxTimestamp, h.LastOffset()
		}
		s.nextOffset = h.NextOffset()
		pos += h.Size()
	}
	s.bytesSinceLastIndexEntry = int(s.size - last.position)
	if s.offsetIndex.entries == 0 {
		s.bytesSinceLastIndexEntry = int(s.size)
	}
	return nil
}

// truncateTo removes every batch whose last offset is at least offset and returns the
// bytes removed. The segment's indexes are left writable: it becomes the active segment.
func (s *segment) truncateTo(offset int64, indexIntervalBytes int, compacted bool) (int64, error) {
	if err := s.use(); err != nil {
		return 0, err
	}
	s.dirty = true
	if err := s.offsetIndex.unseal(); err != nil {
		return 0, err
	}
	if err := s.timeIndex.unseal(); err != nil {
		return 0, err
	}
	pos, h, ok, err := s.translateOffset(offset)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, nil // offset is at or past the segment's end
	}
	if err := s.offsetIndex.truncateBelow(h.BaseOffset); err != nil {
		return 0, err
	}
	if err := s.timeIndex.truncateBelow(h.BaseOffset); err != nil {
		return 0, err
	}
	removed := s.size - pos
	if err := s.log.Truncate(pos); err != nil {
		return 0, err
	}
	s.size = pos
	if s.size == 0 {
		s.firstBatchTimestamp = -1
	}
	if err := s.loadTail(indexIntervalBytes, compacted); err != nil {
		return removed, err
	}
	if err := s.truncateTxnIndex(s.nextOffset); err != nil {
		return removed, err
	}
	return removed, nil
}

// seal makes the segment inactive: a final time index entry for its largest timestamp,
// written with any pending entries, then both indexes mapped over their entries.
func (s *segment) seal() error {
	if err := s.use(); err != nil {
		return err
	}
	if s.timeIndex.writable && s.maxTimestamp >= 0 && !s.timeIndex.full(1) {
		s.timeIndex.maybeAppend(s.maxTimestamp, s.offsetOfMaxTimestamp)
	}
	if err := s.offsetIndex.seal(); err != nil {
		return err
	}
	return s.timeIndex.seal()
}

// unseal makes the segment active again: both indexes writable. The files of a segment
// the cache has closed are not opened for it: attach maps writable indexes.
func (s *segment) unseal() error {
	if !s.held && s.c.markWritableIfClosed(s) {
		return nil
	}
	if err := s.use(); err != nil {
		return err
	}
	if err := s.offsetIndex.unseal(); err != nil {
		return err
	}
	return s.timeIndex.unseal()
}

// synced reports whether nothing was written to the segment's files since their last
// fsync.
func (s *segment) synced() bool {
	return !s.dirty && s.offsetIndex.synced() && s.timeIndex.synced() && !s.txnDirty
}

// sync fsyncs those of the log and its indexes that were written since their last fsync.
func (s *segment) sync() error {
	if s.synced() {
		return nil
	}
	if err := s.use(); err != nil {
		return err
	}
	if s.dirty {
		if err := syncFile(s.log); err != nil {
			return err
		}
	}
	if err := s.offsetIndex.sync(); err != nil {
		return err
	}
	if err := s.timeIndex.sync(); err != nil {
		return err
	}
	if s.txnDirty {
		if err := syncTxnIndex(s.dir, s.baseOffset); err != nil {
			return err
		}
		s.txnDirty = false
	}
	s.dirty = false
	return nil
}

// close writes pending index entries and closes every file.
func (s *segment) close() error {
	s.c.forget(s)
	var err error
	if s.txnDirty {
		err = syncTxnIndex(s.dir, s.baseOffset)
		s.txnDirty = false
	}
	if e := s.offsetIndex.close(); err == nil {
		err = e
	}
	if e := s.timeIndex.close(); err == nil {
		err = e
	}
	if s.log != nil {
		if e := s.closeLog(); err == nil {
			err = e
		}
		s.log = nil
	}
	return err
}

// closeLog drops the segment's reference to its .log file: the file closes now, or
// when the last Hold on it is released (hold.go).
func (s *segment) closeLog() error {
	ref := s.logRef
	s.logRef = nil
	if ref == nil {
		return nil
	}
	return ref.release()
}

// remove closes the segment and deletes its files.
func (s *segment) remove() error {
	s.c.forget(s)
	if s.unborn {
		return nil // no file was ever created
	}
	s.offsetIndex.remove()
	s.timeIndex.remove()
	if s.log != nil {
		s.closeLog()
		s.log = nil
	}
	if err := os.Remove(segmentPath(s.dir, s.baseOffset, TxnIndexFileSuffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.Remove(segmentPath(s.dir, s.baseOffset, LogFileSuffix))
}
