package segment

import (
	"encoding/binary"
	"fmt"
	"os"
	"sort"
	"syscall"
)

// Index entry sizes.
const (
	offsetIndexEntrySize = 8  // relative offset uint32, position uint32
	timeIndexEntrySize   = 12 // timestamp int64, relative offset uint32
)

// indexFile is a memory-mapped file of fixed-size entries, the common part of the offset
// and time indexes. While writable, the file is preallocated to its maximum size and the
// mapping covers it; when sealed, the file is trimmed to its entries and mapped read-only.
type indexFile struct {
	dir        string   // the partition directory (the Log's string, not a copy)
	base       int64    // the segment's base offset
	file       *os.File // nil while the file cache has the segment closed
	data       []byte   // the mapping; nil when the file is empty and sealed, or closed
	entrySize  int
	entries    int  // valid entries at the start of data
	maxEntries int  // capacity while writable
	writable   bool // preallocated and mapped read-write
	// preallocated is set while the file on disk may be longer than its entries (mapped
	// writable since its last trim): closing a detached index trims it only then.
	preallocated bool
}

// suffix is the file's suffix: IndexFileSuffix or TimeIndexFileSuffix.
func (ix *indexFile) suffix() string {
	if ix.entrySize == timeIndexEntrySize {
		return TimeIndexFileSuffix
	}
	return IndexFileSuffix
}

// openIndexFile opens or creates an index file. All whole entries in the file count as
// entries until the caller trims them with truncateEntries (after validating them).
func openIndexFile(dir string, base int64, suffix string, entrySize, maxEntries int, writable bool) (*indexFile, error) {
	f, err := os.OpenFile(segmentPath(dir, base, suffix), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	ix := &indexFile{dir: dir, base: base, file: f, entrySize: entrySize, maxEntries: maxEntries}
	ix.entries = int(st.Size()) / entrySize
	if err := ix.remap(writable, int(st.Size())); err != nil {
		f.Close()
		return nil, err
	}
	return ix, nil
}

// remap resizes the file and maps it again: writable maps max(maxEntries, entries)
// entries read-write; sealed trims the file to its entries and maps it read-only.
// fileSize is the current size of the file, used when mapping an unchanged file.
func (ix *indexFile) remap(writable bool, fileSize int) error {
	if err := ix.unmap(); err != nil {
		return err
	}
	var size int
	if writable {
		size = max(ix.maxEntries, ix.entries) * ix.entrySize
	} else {
		size = ix.entries * ix.entrySize
	}
	if size != fileSize {
		if err := ix.file.Truncate(int64(size)); err != nil {
			return fmt.Errorf("resizing index %s: %w", ix.filePath(), err)
		}
	}
	ix.writable, ix.preallocated = writable, writable
	if size == 0 {
		return nil
	}
	prot := syscall.PROT_READ
	if writable {
		prot |= syscall.PROT_WRITE
	}
	data, err := syscall.Mmap(int(ix.file.Fd()), 0, size, prot, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mapping index %s: %w", ix.filePath(), err)
	}
	ix.data = data
	return nil
}

// filePath is the index file's name, built when needed (a path per index would be most
// of an idle segment's heap).
func (ix *indexFile) filePath() string { return segmentPath(ix.dir, ix.base, ix.suffix()) }

// attach opens and maps the file again after detach, as it was: preallocated and
// read-write when writable, trimmed to its entries and read-only when sealed.
func (ix *indexFile) attach() error {
	f, err := os.OpenFile(ix.filePath(), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	ix.file = f
	if err := ix.remap(ix.writable, int(st.Size())); err != nil {
		ix.file = nil
		f.Close()
		return err
	}
	return nil
}

// detach unmaps and closes the file, keeping the entry count; a writable index stays
// preallocated, and pages written through the mapping stay in the page cache.
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

// mappedSize is the current size of the file as mapped.
func (ix *indexFile) mappedSize() int { return len(ix.data) }

// entry returns the i-th entry's bytes.
func (ix *indexFile) entry(i int) []byte {
	return ix.data[i*ix.entrySize : (i+1)*ix.entrySize]
}

// full reports whether a writable index has no room for reserve more entries.
func (ix *indexFile) full(reserve int) bool {
	return ix.entries+reserve > ix.maxEntries
}

// appendEntry writes the next entry. The index must be writable and not full.
func (ix *indexFile) appendEntry(fill func(b []byte)) {
	fill(ix.data[ix.entries*ix.entrySize : (ix.entries+1)*ix.entrySize])
	ix.entries++
}

// truncateEntries keeps the first n entries and zeroes the rest of the old entries, so a
// crash cannot leave stale entries behind them.
func (ix *indexFile) truncateEntries(n int) {
	if n >= ix.entries {
		return
	}
	if ix.writable {
		clear(ix.data[n*ix.entrySize : ix.entries*ix.entrySize])
	}
	ix.entries = n
}

// seal trims the file to its entries and maps it read-only.
func (ix *indexFile) seal() error {
	if !ix.writable {
		if ix.entries*ix.entrySize == ix.mappedSize() {
			return nil
		}
		return ix.remap(false, ix.mappedSize())
	}
	return ix.remap(false, ix.mappedSize())
}

// unseal preallocates the file again and maps it read-write.
func (ix *indexFile) unseal() error {
	if ix.writable {
		return nil
	}
	return ix.remap(true, ix.mappedSize())
}

// sync flushes the file, including pages written through the mapping.
func (ix *indexFile) sync() error { return ix.file.Sync() }

// close trims a writable index to its entries and closes the file.
func (ix *indexFile) close() error {
	if ix.file == nil { // closed by the file cache: trim by name
		var err error
		if ix.writable && ix.preallocated {
			err = os.Truncate(ix.filePath(), int64(ix.entries*ix.entrySize))
		}
		ix.writable, ix.preallocated = false, false
		return err
	}
	err := ix.seal()
	if uerr := ix.unmap(); err == nil {
		err = uerr
	}
	if cerr := ix.file.Close(); err == nil {
		err = cerr
	}
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
// position, with positions inside a .log of logSize bytes, and whether only zero bytes (a
// preallocated, untrimmed tail) follow them.
func (ix offsetIndex) validPrefix(logSize int64) (n int, cleanTail bool) {
	prev := offsetPosition{offset: -1, position: -1}
	for n = 0; n < ix.entries; n++ {
		e := ix.at(n)
		if e.offset <= prev.offset || e.position <= prev.position || e.position >= logSize {
			break
		}
		prev = e
	}
	return n, allZero(ix.data[n*ix.entrySize : ix.entries*ix.entrySize])
}

// truncateBelow keeps the entries with offsets below offset.
func (ix offsetIndex) truncateBelow(offset int64) {
	n := sort.Search(ix.entries, func(i int) bool { return ix.at(i).offset >= offset })
	ix.truncateEntries(n)
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
	return n, allZero(ix.data[n*ix.entrySize : ix.entries*ix.entrySize])
}

// truncateBelow keeps the entries with offsets below offset.
func (ix timeIndex) truncateBelow(offset int64) {
	n := sort.Search(ix.entries, func(i int) bool { return ix.at(i).offset >= offset })
	ix.truncateEntries(n)
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
