package fsm

import (
	"io"
	"sync/atomic"
	"time"
)

// Stats counts what the state machine has applied since it was created: the snapshot
// restored (its size and how long decoding it took) and the log entries applied after
// it (their number and the bytes of their data). A restarted broker reports them in
// its start-up trace.
type Stats struct {
	SnapshotBytes   int64
	SnapshotRestore time.Duration
	Entries         int64
	EntryBytes      int64
	// EntriesSinceSnapshot and BytesSinceSnapshot count the entries applied since
	// the last snapshot was taken or restored (all of them when there was none).
	EntriesSinceSnapshot int64
	BytesSinceSnapshot   int64
}

// stats are the counters behind Stats, written by Apply and Restore.
type stats struct {
	snapshotBytes, snapshotNanos, entries, entryBytes atomic.Int64
	// entries and entryBytes when the last snapshot was taken (FSM.Snapshot).
	snapshotEntries, snapshotEntryBytes atomic.Int64
}

// snapshotTaken records the counters at a snapshot: what is applied after it counts
// towards the next one.
func (s *stats) snapshotTaken() {
	s.snapshotEntries.Store(s.entries.Load())
	s.snapshotEntryBytes.Store(s.entryBytes.Load())
}

// Stats returns the counters so far. Safe to call from any goroutine.
func (f *FSM) Stats() Stats {
	entries, bytes := f.stats.entries.Load(), f.stats.entryBytes.Load()
	return Stats{
		SnapshotBytes:        f.stats.snapshotBytes.Load(),
		SnapshotRestore:      time.Duration(f.stats.snapshotNanos.Load()),
		Entries:              entries,
		EntryBytes:           bytes,
		EntriesSinceSnapshot: entries - f.stats.snapshotEntries.Load(),
		BytesSinceSnapshot:   bytes - f.stats.snapshotEntryBytes.Load(),
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
