package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"syscall"
)

// Index entry sizes.
const (
	offsetIndexEntrySize = 8  // relative offset uint32, position uint32
	timeIndexEntrySize   = 12 // timestamp int64, relative offset uint32
)

// indexFile is a file of fixed-size entries, the common part of the offset and time
// indexes. Entries are written with pwrite and read through a read-only shared mapping
// of the file; nothing is ever written through the mapping. The file holds exactly its
// entries (no preallocated, sparse tail), so:
//
//   - a full file system fails the write of an entry with ENOSPC, an error of the append
//     (the log's sticky failure), never a SIGBUS from a page fault in a mapping;
//   - dropping entries is an ftruncate: no zeros are written over space the index might
//     grow into, and no stale entry is left behind the kept ones.
//
// While the index is writable the mapping covers maxEntries entries, past the end of the
// file, so appends never remap; only the part below the file's end is ever read. A
// sealed index is mapped exactly over its entries. Entries appended during one segment
// call are collected in pending and written with one pwrite by flush, which every
// segment method that appends calls before it returns: outside a call pending is empty,
// unless that write failed (the log has then failed too).
type indexFile struct {
	dir        string   // the partition directory (the Log's string, not a copy)
	base       int64    // the segment's base offset
	file       *os.File // nil while the file cache has the segment closed
	data       []byte   // the read-only mapping; nil when there is nothing to map, or closed
	entrySize  int
	entries    int // valid entries: written ones, then pending ones
	written    int // entries in the file, at its start
	maxEntries int // capacity while writable
	// fileSize is the file's length as this index last saw or set it: written*entrySize,
	// except for a file an older build preallocated (or a write that failed half-way)
	// until truncateEntries trims it.
	fileSize int64
	pending  []byte // entries [written, entries), not yet written to the file
	writable bool   // appends allowed; mapped over maxEntries
	// unsynced is set when the file may differ from what is on disk: entries or a
	// length written since its last fsync, or a recovered segment's file (a crashed
	// process may have written it without an fsync). sync skips the fsync of a file
	// without it. A file opened otherwise was fsynced by whoever wrote it: at its
	// segment's roll, its log's clean close, or the recovery that trusted it.
	unsynced bool
}

// suffix is the file's suffix: IndexFileSuffix or TimeIndexFileSuffix.
func (ix *indexFile) suffix() string {
	if ix.entrySize == timeIndexEntrySize {
		return TimeIndexFileSuffix
	}
	return IndexFileSuffix
}

// openIndexFile opens or creates an index file, and reports whether it created it. All
// whole entries in the file count as entries until the caller trims them with
// truncateEntries (after validating them).
func openIndexFile(dir string, base int64, suffix string, entrySize, maxEntries int, writable bool) (ix *indexFile, created bool, err error) {
	path := segmentPath(dir, base, suffix)
	f, err := OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		created = true
		f, err = OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	}
	if err != nil {
		return nil, false, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, false, err
	}
	ix = &indexFile{dir: dir, base: base, file: f, entrySize: entrySize, maxEntries: maxEntries, writable: writable}
	ix.fileSize = st.Size()
	ix.entries = int(st.Size()) / entrySize
	ix.written = ix.entries
	if err := ix.mapFile(); err != nil {
		f.Close()
		return nil, false, err
	}
	return ix, created, nil
}

// mapFile maps the file again, read-only: over max(maxEntries, entries) entries while
// writable, over the written entries when sealed.
func (ix *indexFile) mapFile() error {
	if err := ix.unmap(); err != nil {
		return err
	}
	size := ix.written * ix.entrySize
	if ix.writable {
		size = max(ix.maxEntries, ix.entries) * ix.entrySize
	}
	if size == 0 {
		return nil
	}
	data, err := syscall.Mmap(int(ix.file.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mapping index %s: %w", ix.filePath(), err)
	}
	ix.data = data
	return nil
}

// filePath is the index file's name, built when needed (a path per index would be most
// of an idle segment's heap).
func (ix *indexFile) filePath() string { return segmentPath(ix.dir, ix.base, ix.suffix()) }

// attach opens and maps the file again after detach, as it was: over maxEntries when
// writable, over its entries when sealed. A missing file is created, unless mustExist.
func (ix *indexFile) attach(mustExist bool) error {
	flags := os.O_RDWR | os.O_CREATE
	if mustExist {
		flags = os.O_RDWR
	}
	f, err := OpenFile(ix.filePath(), flags, 0o644)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	ix.file, ix.fileSize = f, st.Size()
	if n := int(st.Size()) / ix.entrySize; n < ix.written {
		// Entries were cut off outside this process: never read past the file's end
		// (lookups check every entry against the log, so fewer only costs a scan).
		ix.written, ix.entries, ix.pending = n, n, nil
	}
	if err := ix.mapFile(); err != nil {
		ix.file = nil
		f.Close()
		return err
	}
	return nil
}

// detach unmaps and closes the file, keeping the entry counts (and pending entries a
// failed write left).
func (ix *indexFile) detach() {
	ix.unmap()
	if ix.file != nil {
		ix.file.Close()
		ix.file = nil
	}
}

func (ix *indexFile) unmap() error {
	if ix.data == nil {
		return nil
	}
	err := syscall.Munmap(ix.data)
	ix.data = nil
	return err
}

// mappedSize is the current size of the mapping.
func (ix *indexFile) mappedSize() int { return len(ix.data) }

// entry returns the i-th entry's bytes: from the mapping when written, else from pending.
func (ix *indexFile) entry(i int) []byte {
	if i >= ix.written {
		i -= ix.written
		return ix.pending[i*ix.entrySize : (i+1)*ix.entrySize]
	}
	return ix.data[i*ix.entrySize : (i+1)*ix.entrySize]
}

// full reports whether a writable index has no room for reserve more entries.
func (ix *indexFile) full(reserve int) bool {
	return ix.entries+reserve > ix.maxEntries
}

// appendEntry adds the next entry to pending; flush writes it. The index must be
// writable and not full.
func (ix *indexFile) appendEntry(fill func(b []byte)) {
	n := len(ix.pending)
	ix.pending = append(ix.pending, make([]byte, ix.entrySize)...)
	fill(ix.pending[n:])
	ix.entries++
}

// maxKeptPending is the largest pending buffer kept for the next appends; a larger one
// (a recovery's rebuilt entries) is dropped once written.
const maxKeptPending = 512

// flush writes the pending entries to the file with one pwrite. On an error (ENOSPC on
// a full file system) they stay pending and the caller fails the log.
func (ix *indexFile) flush() error {
	if len(ix.pending) == 0 {
		return nil
	}
	if ix.file == nil {
		return fmt.Errorf("writing index %s: %w", ix.filePath(), os.ErrClosed)
	}
	at := int64(ix.written * ix.entrySize)
	ix.unsynced = true
	n, err := ix.file.WriteAt(ix.pending, at)
	ix.fileSize = max(ix.fileSize, at+int64(n))
	if err != nil {
		return fmt.Errorf("writing index %s: %w", ix.filePath(), err)
	}
	ix.written = ix.entries
	if cap(ix.pending) > maxKeptPending {
		ix.pending = nil
	} else {
		ix.pending = ix.pending[:0]
	}
	return nil
}

// truncateEntries keeps the first n entries. Written entries past them are cut off the
// file with ftruncate, and so is anything past the written entries (an older build's
// preallocated tail, a torn entry): the file then ends at its last entry, with no stale
// entry and no zero written.
func (ix *indexFile) truncateEntries(n int) error {
	n = min(n, ix.entries)
	if n >= ix.written {
		ix.pending = ix.pending[:(n-ix.written)*ix.entrySize]
	} else {
		ix.pending = ix.pending[:0]
		ix.written = n
	}
	ix.entries = n
	if size := int64(ix.written * ix.entrySize); ix.fileSize != size {
		if err := ix.truncateFile(size); err != nil {
			return err
		}
	}
	return nil
}

// truncateFile sets the file's length to size, by name when the file cache has it
// closed.
func (ix *indexFile) truncateFile(size int64) error {
	var err error
	ix.unsynced = true
	if ix.file != nil {
		err = ix.file.Truncate(size)
	} else {
		err = os.Truncate(ix.filePath(), size)
	}
	if err != nil {
		return fmt.Errorf("truncating index %s: %w", ix.filePath(), err)
	}
	ix.fileSize = size
	return nil
}

// zeroFrom reports whether every byte of the file from pos to its end is zero (an
// untrimmed, preallocated tail). It reads the file, not the mapping: reading holes
// through a shared mapping allocates pages on tmpfs.
func (ix *indexFile) zeroFrom(pos int64) bool {
	if pos >= ix.fileSize || ix.file == nil {
		return pos >= ix.fileSize
	}
	buf := make([]byte, min(ix.fileSize-pos, 64<<10))
	for pos < ix.fileSize {
		n, err := ix.file.ReadAt(buf[:min(int64(len(buf)), ix.fileSize-pos)], pos)
		if !allZero(buf[:n]) {
			return false
		}
		pos += int64(n)
		if err != nil {
			return err == io.EOF
		}
	}
	return true
}

// seal writes pending entries, trims the file to its entries and maps it read-only
// over them.
func (ix *indexFile) seal() error {
	if err := ix.flush(); err != nil {
		return err
	}
	if err := ix.truncateEntries(ix.entries); err != nil {
		return err
	}
	if !ix.writable && ix.mappedSize() == ix.written*ix.entrySize {
		return nil
	}
	ix.writable = false
	return ix.mapFile()
}

// unseal makes the index writable: mapped over maxEntries for the appends to come. The
// file does not change.
func (ix *indexFile) unseal() error {
	if ix.writable {
		return nil
	}
	ix.writable = true
	return ix.mapFile()
}

// synced reports whether the file holds every entry and is on disk as written.
func (ix *indexFile) synced() bool { return !ix.unsynced && len(ix.pending) == 0 }

// sync writes pending entries and fsyncs the file, unless nothing was written to it
// since its last fsync.
func (ix *indexFile) sync() error {
	if err := ix.flush(); err != nil {
		return err
	}
	if !ix.unsynced {
		return nil
	}
	if err := syncFile(ix.file); err != nil {
		return err
	}
	ix.unsynced = false
	return nil
}

// close writes pending entries and closes the file. The file holds exactly its entries
// already (an older build's preallocated file was trimmed when opened).
func (ix *indexFile) close() error {
	ix.writable = false
	if ix.file == nil { // closed by the file cache
		return nil
	}
	err := ix.flush()
	if terr := ix.truncateEntries(ix.entries); err == nil {
		err = terr
	}
	if uerr := ix.unmap(); err == nil {
		err = uerr
	}
	if cerr := ix.file.Close(); err == nil {
		err = cerr
	}
	ix.file = nil
	return err
}

// remove closes the index and deletes its file.
func (ix *indexFile) remove() error {
	ix.detach()
	return os.Remove(ix.filePath())
}

// offsetIndex maps offsets to batch positions in the segment's .log file.
type offsetIndex struct {
	*indexFile
	baseOffset int64
}

// offsetPosition is one offset index entry with the offset made absolute.
type offsetPosition struct {
	offset   int64
	position int64
}

func (ix offsetIndex) at(i int) offsetPosition {
	e := ix.entry(i)
	return offsetPosition{
		offset:   ix.baseOffset + int64(binary.BigEndian.Uint32(e[0:])),
		position: int64(binary.BigEndian.Uint32(e[4:])),
	}
}

// last returns the last entry, or (baseOffset, 0) when the index is empty.
func (ix offsetIndex) last() offsetPosition {
	if ix.entries == 0 {
		return offsetPosition{offset: ix.baseOffset, position: 0}
	}
	return ix.at(ix.entries - 1)
}

// lookup returns the greatest entry whose offset is at most target, or (baseOffset, 0).
func (ix offsetIndex) lookup(target int64) offsetPosition {
	i := sort.Search(ix.entries, func(i int) bool { return ix.at(i).offset > target })
	if i == 0 {
		return offsetPosition{offset: ix.baseOffset, position: 0}
	}
	return ix.at(i - 1)
}

func (ix offsetIndex) append(offset, position int64) {
	ix.appendEntry(func(b []byte) {
		binary.BigEndian.PutUint32(b[0:], uint32(offset-ix.baseOffset))
		binary.BigEndian.PutUint32(b[4:], uint32(position))
	})
}

// validPrefix returns how many leading entries are strictly increasing in offset and
// position, with positions inside a .log of logSize bytes, and whether only zero bytes
// follow them in the file (an older build's preallocated, untrimmed tail, or an extended
// file's last bytes that a crash left as zeros).
func (ix offsetIndex) validPrefix(logSize int64) (n int, cleanTail bool) {
	prev := offsetPosition{offset: -1, position: -1}
	for n = 0; n < ix.entries; n++ {
		e := ix.at(n)
		if e.offset <= prev.offset || e.position <= prev.position || e.position >= logSize {
			break
		}
		prev = e
	}
	return n, ix.zeroFrom(int64(n * ix.entrySize))
}

// truncateBelow keeps the entries with offsets below offset.
func (ix offsetIndex) truncateBelow(offset int64) error {
	n := sort.Search(ix.entries, func(i int) bool { return ix.at(i).offset >= offset })
	return ix.truncateEntries(n)
}

// timeIndex maps timestamps to offsets.
type timeIndex struct {
	*indexFile
	baseOffset int64
}

// timestampOffset is one time index entry with the offset made absolute.
type timestampOffset struct {
	timestamp int64
	offset    int64
}

func (ix timeIndex) at(i int) timestampOffset {
	e := ix.entry(i)
	return timestampOffset{
		timestamp: int64(binary.BigEndian.Uint64(e[0:])),
		offset:    ix.baseOffset + int64(binary.BigEndian.Uint32(e[8:])),
	}
}

// last returns the last entry and whether there is one.
func (ix timeIndex) last() (timestampOffset, bool) {
	if ix.entries == 0 {
		return timestampOffset{timestamp: -1, offset: ix.baseOffset}, false
	}
	return ix.at(ix.entries - 1), true
}

// lookup returns the offset of the greatest entry whose timestamp is at most ts, or the
// segment's base offset.
func (ix timeIndex) lookup(ts int64) int64 {
	if e, ok := ix.lookupEntry(ts); ok {
		return e.offset
	}
	return ix.baseOffset
}

// lookupEntry returns the greatest entry whose timestamp is at most ts; ok is false when
// there is none.
func (ix timeIndex) lookupEntry(ts int64) (e timestampOffset, ok bool) {
	i := sort.Search(ix.entries, func(i int) bool { return ix.at(i).timestamp > ts })
	if i == 0 {
		return timestampOffset{}, false
	}
	return ix.at(i - 1), true
}

// maybeAppend adds (ts, offset) when ts is larger than the last entry's timestamp.
func (ix timeIndex) maybeAppend(ts, offset int64) {
	if ts < 0 {
		return // no timestamp
	}
	if last, ok := ix.last(); ok && (ts <= last.timestamp || offset <= last.offset) {
		return
	}
	ix.appendEntry(func(b []byte) {
		binary.BigEndian.PutUint64(b[0:], uint64(ts))
		binary.BigEndian.PutUint32(b[8:], uint32(offset-ix.baseOffset))
	})
}

// validPrefix is offsetIndex.validPrefix for timestamps and offsets: both must grow and
// offsets stay below nextOffset.
func (ix timeIndex) validPrefix(nextOffset int64) (n int, cleanTail bool) {
	prev := timestampOffset{timestamp: -1, offset: -1}
	for n = 0; n < ix.entries; n++ {
		e := ix.at(n)
		if e.timestamp <= prev.timestamp || e.offset <= prev.offset || e.offset >= nextOffset {
			break
		}
		prev = e
	}
	return n, ix.zeroFrom(int64(n * ix.entrySize))
}

// truncateBelow keeps the entries with offsets below offset.
func (ix timeIndex) truncateBelow(offset int64) error {
	n := sort.Search(ix.entries, func(i int) bool { return ix.at(i).offset >= offset })
	return ix.truncateEntries(n)
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
