package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// The transaction index (.txnindex) of a segment lists the aborted transactions whose
// ABORT marker lies in that segment, in Kafka's format: back-to-back 34-byte entries of
// version int16 (0), producerId int64, firstOffset int64, lastOffset int64 (the marker's
// offset) and lastStableOffset int64 (the partition's LSO once the marker was applied),
// big-endian, in marker order. The file exists only when the segment has an aborted
// transaction. It is small and read whole when used, so it holds no descriptor: an
// append opens, writes and closes it, and segment.sync fsyncs it when it was written.

// TxnIndexEntrySize is the size of one .txnindex entry.
const TxnIndexEntrySize = 34

// ErrCorruptTxnIndex reports a .txnindex entry of an unknown version.
var ErrCorruptTxnIndex = errors.New("segment: corrupt transaction index")

// AbortedTxn is an aborted transaction of a partition (Kafka's AbortedTxn): its
// producer, its first offset, the offset of its ABORT marker and the last stable offset
// right after the marker.
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

// AppendTxnIndexEntry appends the 34-byte encoding of a to b.
func AppendTxnIndexEntry(b []byte, a AbortedTxn) []byte {
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(a.ProducerID))
	b = binary.BigEndian.AppendUint64(b, uint64(a.FirstOffset))
	b = binary.BigEndian.AppendUint64(b, uint64(a.LastOffset))
	return binary.BigEndian.AppendUint64(b, uint64(a.LastStableOffset))
}

// ParseTxnIndex decodes the bytes of a .txnindex file. A torn last entry (fewer than 34
// bytes, a write cut by a crash) is dropped, as Kafka does; an entry of another version
// than 0 is ErrCorruptTxnIndex.
func ParseTxnIndex(b []byte) ([]AbortedTxn, error) {
	out := make([]AbortedTxn, 0, len(b)/TxnIndexEntrySize)
	for ; len(b) >= TxnIndexEntrySize; b = b[TxnIndexEntrySize:] {
		if v := int16(binary.BigEndian.Uint16(b)); v != 0 {
			return nil, fmt.Errorf("%w: entry %d has version %d", ErrCorruptTxnIndex, len(out), v)
		}
		out = append(out, AbortedTxn{
			ProducerID:       int64(binary.BigEndian.Uint64(b[2:])),
			FirstOffset:      int64(binary.BigEndian.Uint64(b[10:])),
			LastOffset:       int64(binary.BigEndian.Uint64(b[18:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(b[26:])),
		})
	}
	return out, nil
}

// readTxnIndex reads a segment's .txnindex; a missing file is no entries.
func readTxnIndex(dir string, base int64) ([]AbortedTxn, error) {
	b, err := ReadFile(segmentPath(dir, base, TxnIndexFileSuffix))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	entries, err := ParseTxnIndex(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", segmentFileName(base, TxnIndexFileSuffix), err)
	}
	return entries, nil
}

// appendTxnIndex appends entries to a segment's .txnindex, first cutting a torn last
// entry so that the new ones stay aligned. created is set when the file was empty (just
// created: writeTxnIndex removes a file rather than leave it empty).
func appendTxnIndex(dir string, base int64, entries []AbortedTxn) (created bool, err error) {
	f, err := OpenFile(segmentPath(dir, base, TxnIndexFileSuffix), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return false, err
	}
	size, err := f.Seek(0, io.SeekEnd)
	created = size == 0
	if err == nil && size%TxnIndexEntrySize != 0 {
		size -= size % TxnIndexEntrySize
		err = f.Truncate(size)
	}
	if err == nil {
		var buf []byte
		for _, a := range entries {
			buf = AppendTxnIndexEntry(buf, a)
		}
		_, err = f.WriteAt(buf, size)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return created, err
}

// writeTxnIndex replaces a segment's .txnindex with entries (none: the file is removed)
// through a fsynced temporary file and a rename (WriteFileAtomic).
func writeTxnIndex(dir string, base int64, entries []AbortedTxn) error {
	path := segmentPath(dir, base, TxnIndexFileSuffix)
	if len(entries) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	var buf []byte
	for _, a := range entries {
		buf = AppendTxnIndexEntry(buf, a)
	}
	return WriteFileAtomic(path, buf)
}

// syncTxnIndex fsyncs a segment's .txnindex, if it exists.
func syncTxnIndex(dir string, base int64) error {
	f, err := os.Open(segmentPath(dir, base, TxnIndexFileSuffix))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// segmentEnd is the offset after segment i: the next segment's base, or the log end.
func (l *Log) segmentEnd(i int) int64 {
	if i+1 < len(l.segments) {
		return l.segments[i+1].baseOffset
	}
	return l.LogEndOffset()
}

// AppendAbortedTxns adds aborted transactions to the transaction index of the segment
// holding each one's marker (LastOffset), normally the active segment. A failure is the
// log's sticky write failure: a lost entry would let read_committed consumers see
// aborted records after a restart.
func (l *Log) AppendAbortedTxns(entries []AbortedTxn) error {
	if err := l.writable(); err != nil {
		return err
	}
	l.txnIndexAbsent = false // a file may be created below
	for len(entries) > 0 {
		i := l.segmentIndexFor(entries[0].LastOffset)
		s, end := l.segments[i], l.segmentEnd(i)
		n := 1
		for n < len(entries) && entries[n].LastOffset < end {
			n++
		}
		created, err := appendTxnIndex(l.dir, s.baseOffset, entries[:n])
		if err != nil {
			return l.fail("transaction index append", err)
		}
		s.txnDirty, s.txnCreated = true, s.txnCreated || created
		entries = entries[n:]
	}
	return nil
}

// SyncTxnIndex makes the transaction index durable as it is now: the .txnindex files
// appended to since their last fsync are fsynced and, when an append created one since
// the directory's last fsync, the directory too. The group commit fsyncs only .log files
// and the next roll the rest, so an owner calls it before it writes a producer snapshot
// that is not a roll's (the shutdown snapshot): recovery trusts the index below the
// newest snapshot. Nothing to do (no syscall) for a log without new aborted
// transactions.
func (l *Log) SyncTxnIndex() error {
	if err := l.writable(); err != nil {
		return err
	}
	created := false
	for _, s := range l.segments {
		if s.txnDirty {
			if err := syncTxnIndex(s.dir, s.baseOffset); err != nil {
				return l.fail("transaction index sync", err)
			}
			s.txnDirty = false
		}
		created = created || s.txnCreated
	}
	if !created {
		return nil
	}
	if err := syncDir(l.dir); err != nil {
		return l.fail("transaction index sync", err)
	}
	for _, s := range l.segments {
		s.txnCreated = false
	}
	return nil
}

// AbortedTxns reads the transaction indexes of every segment: the aborted transactions
// whose marker lies in [log start, log end), in marker order, without duplicates (a
// compaction swap interrupted before its commit point leaves the merged index at its
// first segment while the later ones still have theirs). ErrCorruptTxnIndex when a
// file holds an unknown version: the caller rebuilds from the log.
func (l *Log) AbortedTxns() ([]AbortedTxn, error) {
	if l.closed {
		return nil, ErrClosed
	}
	if l.txnIndexAbsent {
		return nil, nil // none listed at Open, nothing written since
	}
	var out []AbortedTxn
	for _, s := range l.segments {
		entries, err := readTxnIndex(l.dir, s.baseOffset)
		if err != nil {
			return nil, err
		}
		out = append(out, entries...)
	}
	return l.normaliseAborted(out), nil
}

// normaliseAborted sorts entries by marker offset, drops duplicates and those outside
// [log start, log end).
func (l *Log) normaliseAborted(entries []AbortedTxn) []AbortedTxn {
	start, end := l.localLogStartOffset, l.LogEndOffset()
	entries = slices.DeleteFunc(entries, func(a AbortedTxn) bool { return a.LastOffset < start || a.LastOffset >= end })
	return dedupeAborted(entries)
}

// dedupeAborted sorts entries by marker offset and keeps one per marker.
func dedupeAborted(entries []AbortedTxn) []AbortedTxn {
	slices.SortStableFunc(entries, func(a, b AbortedTxn) int { return compareInt64(a.LastOffset, b.LastOffset) })
	return slices.CompactFunc(entries, func(a, b AbortedTxn) bool { return a.LastOffset == b.LastOffset })
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// RewriteAbortedTxnsFrom makes the transaction indexes agree with entries for every
// marker at or after from: recovery replays the log from a producer snapshot at from
// and hands over the aborted transactions it found (the entries of a segment recovered
// after a crash, which may have been lost or torn). Entries below from are kept; files
// already right are not written.
func (l *Log) RewriteAbortedTxnsFrom(from int64, entries []AbortedTxn) error {
	if err := l.writable(); err != nil {
		return err
	}
	if l.txnIndexAbsent && !slices.ContainsFunc(entries, func(a AbortedTxn) bool { return a.LastOffset >= from }) {
		return nil // no file to read, none to write
	}
	l.txnIndexAbsent = false // a file may be created below
	for i := l.segmentIndexFor(from); i < len(l.segments); i++ {
		s, end := l.segments[i], l.segmentEnd(i)
		old, err := readTxnIndex(l.dir, s.baseOffset)
		if err != nil && !errors.Is(err, ErrCorruptTxnIndex) {
			return l.fail("transaction index read", err)
		}
		var want []AbortedTxn
		for _, a := range old {
			if a.LastOffset < from && a.LastOffset >= s.baseOffset {
				want = append(want, a)
			}
		}
		for _, a := range entries {
			if a.LastOffset >= max(from, s.baseOffset) && (a.LastOffset < end || i == len(l.segments)-1) {
				want = append(want, a)
			}
		}
		if err == nil && slices.Equal(old, want) {
			continue
		}
		if err := writeTxnIndex(l.dir, s.baseOffset, want); err != nil {
			return l.fail("transaction index rewrite", err)
		}
	}
	return nil
}

// truncateTxnIndex drops the entries whose marker is at or after offset.
func (s *segment) truncateTxnIndex(offset int64) error {
	entries, err := readTxnIndex(s.dir, s.baseOffset)
	if errors.Is(err, ErrCorruptTxnIndex) {
		return nil // left for the reader, whose caller rebuilds every index from the log
	}
	if err != nil {
		return err
	}
	keep := slices.DeleteFunc(slices.Clone(entries), func(a AbortedTxn) bool { return a.LastOffset >= offset })
	if len(keep) == len(entries) {
		return nil
	}
	return writeTxnIndex(s.dir, s.baseOffset, keep)
}
