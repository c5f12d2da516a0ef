package segment

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// EpochEntry is one leader epoch and the first offset written in it.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// LeaderEpochCache is a partition's ordered (epoch, start offset) list, persisted to
// leader-epoch-checkpoint on every change. Epochs and start offsets both strictly grow.
// Not safe for concurrent use: it belongs to its Log, whose owner locks.
type LeaderEpochCache struct {
	dir     string // the partition directory (the Log's string); the file's path is built on use
	entries []EpochEntry
	// missing is set when the file did not exist when the cache was opened.
	missing bool
	// unflushed is set when the entries changed at open (truncateEndAtOpen) or by a new
	// leadership (AssignLeaderStart) and the file still holds the entries from before:
	// written by the next flush, at the latest before the log is appended to
	// (flushIfUnflushed).
	unflushed bool
	// log is the Log the cache belongs to, which makes the partition directory when it
	// has none yet (Log.makeDirDurable); nil for a cache without a Log.
	log *Log
}

// path is the checkpoint file's name.
func (c *LeaderEpochCache) path() string { return filepath.Join(c.dir, LeaderEpochCheckpointFile) }

// openLeaderEpochCache reads dir's leader-epoch-checkpoint. A corrupt or non-monotonic
// file is reported as ErrCorruptCheckpoint so that the caller can rebuild the cache.
func openLeaderEpochCache(dir string) (*LeaderEpochCache, error) {
	c := &LeaderEpochCache{dir: dir}
	path := c.path()
	lines, err := ReadCheckpoint(path)
	if err != nil {
		return c, err
	}
	if lines == nil {
		c.missing = !fileExists(path)
	}
	for _, line := range lines {
		f := strings.Split(line, " ")
		if len(f) != 2 {
			return c, fmt.Errorf("%w: %s: line %q", ErrCorruptCheckpoint, path, line)
		}
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || e < 0 || o < 0 {
			return c, fmt.Errorf("%w: %s: line %q", ErrCorruptCheckpoint, path, line)
		}
		if n := len(c.entries); n > 0 && (int32(e) <= c.entries[n-1].Epoch || o < c.entries[n-1].StartOffset) {
			return c, fmt.Errorf("%w: %s: entries out of order at %q", ErrCorruptCheckpoint, path, line)
		}
		c.entries = append(c.entries, EpochEntry{int32(e), o})
	}
	return c, nil
}

// Entries returns a copy of the cache's entries, oldest first.
func (c *LeaderEpochCache) Entries() []EpochEntry {
	return append([]EpochEntry(nil), c.entries...)
}

// LatestEpoch returns the newest epoch, or -1 when the cache is empty.
func (c *LeaderEpochCache) LatestEpoch() int32 {
	if len(c.entries) == 0 {
		return -1
	}
	return c.entries[len(c.entries)-1].Epoch
}

// Assign records that epoch starts at startOffset. Negative epochs are ignored. Entries
// with an epoch at or above epoch, or a start offset at or above startOffset, are removed
// first, so the list stays monotonic (Kafka's LeaderEpochFileCache.assign).
func (c *LeaderEpochCache) Assign(epoch int32, startOffset int64) error {
	return c.assign(epoch, startOffset, true)
}

// assign is Assign; dirSync false leaves the file's rename to the caller's next step,
// which fsyncs the partition directory before any record is written (write).
func (c *LeaderEpochCache) assign(epoch int32, startOffset int64, dirSync bool) error {
	if epoch < 0 || startOffset < 0 {
		return nil
	}
	if n := len(c.entries); n > 0 {
		last := c.entries[n-1]
		if last.Epoch == epoch && last.StartOffset <= startOffset {
			return nil
		}
	}
	keep := c.entries[:0]
	for _, e := range c.entries {
		if e.Epoch < epoch && e.StartOffset < startOffset {
			keep = append(keep, e)
		}
	}
	c.entries = append(keep, EpochEntry{epoch, startOffset})
	return c.write(dirSync)
}

// AssignLeaderStart records that a new leadership's epoch starts at startOffset (the log
// end offset when the replica becomes leader) without writing the file: the entry is
// made durable by the next rewrite, at the latest before the log's next append
// (flushIfUnflushed), so a leadership that never appends never fsyncs. Callers see the
// entry at once (LatestEpoch, EndOffsetFor). Kafka's makeLeader assigns the epoch with a
// synchronous checkpoint write (LeaderEpochFileCache.assign, which KAFKA-15046 and
// KAFKA-16541 left synchronous); Petrel defers it because the entry describes only
// records of its epoch: with none appended, losing it in a crash loses nothing (the
// next leadership has a higher epoch, followers hold no record of it), and with some
// appended the file was fsynced before the first of them (DESIGN.md invariant R3). A
// clean restart that resumes its leaderships (DESIGN.md C8c) becomes leader again in the
// same epoch: an entry without records was dropped at open and is added again at the
// same start offset, and one with records is kept as it is (Assign's same-epoch rule).
// When the entry is not a plain extension (epoch not above the latest, or startOffset
// below the latest start) it falls back to Assign.
func (c *LeaderEpochCache) AssignLeaderStart(epoch int32, startOffset int64) error {
	if epoch < 0 || startOffset < 0 {
		return nil
	}
	if n := len(c.entries); n > 0 && (epoch <= c.entries[n-1].Epoch || startOffset < c.entries[n-1].StartOffset) {
		return c.Assign(epoch, startOffset)
	}
	if n := len(c.entries); n > 0 && c.entries[n-1].StartOffset == startOffset {
		// The previous epoch holds no record: Assign would replace it too.
		c.entries = c.entries[:n-1]
	}
	c.entries = append(c.entries, EpochEntry{epoch, startOffset})
	c.unflushed = true
	return nil
}

// EndOffsetFor answers OffsetForLeaderEpoch for requestedEpoch on a log whose end offset is
// logEndOffset: the largest epoch at most requestedEpoch and the offset where the next
// epoch starts (or the log end offset for the latest epoch). (-1, -1) means unknown.
func (c *LeaderEpochCache) EndOffsetFor(requestedEpoch int32, logEndOffset int64) (epoch int32, endOffset int64) {
	n := len(c.entries)
	if requestedEpoch < 0 || n == 0 {
		return -1, -1
	}
	if requestedEpoch == c.entries[n-1].Epoch {
		return requestedEpoch, logEndOffset
	}
	higher := -1 // first entry with a larger epoch
	for i, e := range c.entries {
		if e.Epoch > requestedEpoch {
			higher = i
			break
		}
	}
	if higher < 0 {
		return -1, -1
	}
	if higher == 0 {
		return requestedEpoch, c.entries[0].StartOffset
	}
	return c.entries[higher-1].Epoch, c.entries[higher].StartOffset
}

// TruncateFromEnd removes the entries that start at or after endOffset (after the log was
// truncated to endOffset).
func (c *LeaderEpochCache) TruncateFromEnd(endOffset int64) error {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= endOffset {
		n--
	}
	if n == len(c.entries) {
		return nil
	}
	c.entries = c.entries[:n]
	return c.flush()
}

// TruncateFromStart drops the epochs that end before startOffset (the new log start
// offset) and moves the start of the epoch holding startOffset up to it.
func (c *LeaderEpochCache) TruncateFromStart(startOffset int64) error {
	floor := -1
	for i, e := range c.entries {
		if e.StartOffset <= startOffset {
			floor = i
		}
	}
	if floor < 0 || (floor == 0 && c.entries[0].StartOffset == startOffset) {
		return nil
	}
	c.entries = append(c.entries[:0], c.entries[floor:]...)
	c.entries[0].StartOffset = startOffset
	return c.flush()
}

// clear removes every entry.
func (c *LeaderEpochCache) clear() error {
	c.entries = c.entries[:0]
	return c.flush()
}

func (c *LeaderEpochCache) flush() error { return c.write(true) }

// write rewrites the file whole (fsynced, renamed into place); dirSync false leaves
// the rename's durability to the caller's next step, which fsyncs the partition
// directory before any record is written (the first segment's birth).
func (c *LeaderEpochCache) write(dirSync bool) error {
	if c.log != nil {
		if err := c.log.makeDirDurable(); err != nil {
			return err
		}
	}
	lines := make([]string, len(c.entries))
	for i, e := range c.entries {
		lines[i] = fmt.Sprintf("%d %d", e.Epoch, e.StartOffset)
	}
	write := WriteFileSynced
	if dirSync {
		write = WriteFileAtomic
	}
	if err := write(c.path(), encodeCheckpoint(lines)); err != nil {
		return err
	}
	c.unflushed = false
	return nil
}

// truncateEndAtOpen removes the entries that start at or after the end offset of the
// log just opened without writing the file: those entries describe no record, and every
// open removes them again until the log grows past them, so the file is rewritten
// before the next append (flushIfUnflushed) or with the next change. That saves an
// fsynced file write per empty replica at start-up (an empty log's epoch starts at its
// end; Kafka's truncateFromEndAsyncFlush, KAFKA-15046).
func (c *LeaderEpochCache) truncateEndAtOpen(endOffset int64) {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= endOffset {
		n--
	}
	if n < len(c.entries) {
		c.entries, c.unflushed = c.entries[:n], true
	}
}

// flushIfUnflushed writes the file when truncateEndAtOpen or AssignLeaderStart left it
// behind the entries. birthFollows says the log's first segment is born next, before
// any record is written: its birth fsyncs the partition directory, which makes the
// file's rename durable too, so the write makes no directory fsync of its own (one
// fsync less for every partition's first write).
func (c *LeaderEpochCache) flushIfUnflushed(birthFollows bool) error {
	if !c.unflushed {
		return nil
	}
	return c.write(!birthFollows)
}
