package segment

import (
	"container/list"
	"sync"
	"sync/atomic"
)

// SegmentFiles is the descriptors one open segment holds: .log, .index and .timeindex
// (and up to two memory maps, one per index).
const SegmentFiles = 3

// FileCache bounds the segments, across every Log that shares it, whose files are open:
// a segment's .log, .index and .timeindex descriptors and its two index mappings are
// opened on first use and closed again, least recently used first, when more than the
// cache's capacity are open. A segment in use is pinned and never closed by the cache:
// during a Log call (its owner's lock held) and while a FileRange read from it is
// unreleased. When every open segment is pinned the cache goes over its capacity rather
// than fail.
//
// A nil *FileCache keeps every segment open from creation to close (no bound).
//
// Segments with writes not yet fsynced are closed only when no other segment can be:
// their fsync then runs on a new descriptor (Linux reports a write-back error to the
// next fsync of the file, whichever descriptor it is made on).
//
// The cache's mutex is a leaf: it is held only for list updates and for closing the
// files of an evicted (unpinned) segment, never while opening files.
//
// A Hold keeps its .log descriptor open after the cache closed the segment, so the
// Holds outstanding are bounded too: past the cache's capacity in Holds, HoldOrCopy
// copies a range instead of holding it (a follower fetch answering tens of thousands
// of partitions, each newly written, once took the process past its open-file limit).
type FileCache struct {
	mu       sync.Mutex
	capacity int
	holds    atomic.Int64 // Holds outstanding on the cache's segments (HoldOrCopy)
	lru      list.List    // *segment, most recently used first; open segments only
	opens    uint64       // segments (re)opened by the cache
	evicts   uint64       // segments closed by the cache
}

// NewFileCache returns a cache that keeps at most segments segments (SegmentFiles
// descriptors each) open; values below 1 are taken as 1.
func NewFileCache(segments int) *FileCache {
	return &FileCache{capacity: max(segments, 1)}
}

// FileCacheStats describes a cache's state.
type FileCacheStats struct {
	Capacity int    // segments kept open at most (unless pinned)
	Open     int    // segments open now
	Opens    uint64 // segments reopened after an eviction
	Evicts   uint64 // segments closed by eviction
}

// Stats returns the cache's counters.
func (c *FileCache) Stats() FileCacheStats {
	if c == nil {
		return FileCacheStats{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return FileCacheStats{Capacity: c.capacity, Open: c.lru.Len(), Opens: c.opens, Evicts: c.evicts}
}

// acquire pins s, opening its files when the cache closed them. It is called by the
// segment's owner only (the Log, under its owner's lock), so s is never opened twice at
// once; an evicted segment is not in the list, so eviction cannot race the opening.
func (c *FileCache) acquire(s *segment) error {
	c.mu.Lock()
	s.refs++
	if s.elem != nil {
		c.lru.MoveToFront(s.elem)
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	err := s.attach()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		s.refs--
		return err
	}
	c.opens++
	c.insertLocked(s)
	return nil
}

// adopt enters a segment whose files the caller has just opened, pinned once.
func (c *FileCache) adopt(s *segment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.refs++
	c.insertLocked(s)
}

func (c *FileCache) insertLocked(s *segment) {
	s.elem = c.lru.PushFront(s)
	c.evictLocked(false)
	c.evictLocked(true)
}

// evictLocked closes unpinned segments, least recently used first, until the cache is
// within its capacity: first those without unsynced writes, then (dirty) any.
func (c *FileCache) evictLocked(dirty bool) {
	for e := c.lru.Back(); c.lru.Len() > c.capacity && e != nil; {
		prev := e.Prev()
		if v := e.Value.(*segment); v.refs == 0 && (dirty || !v.dirty) {
			c.lru.Remove(e)
			v.elem = nil
			v.detach()
			c.evicts++
		}
		e = prev
	}
}

// pin takes one more reference on an open, pinned segment (a FileRange's).
func (c *FileCache) pin(s *segment) {
	c.mu.Lock()
	s.refs++
	c.mu.Unlock()
}

// release drops one reference; an unpinned segment over capacity is closed.
func (c *FileCache) release(s *segment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.refs--
	if s.refs == 0 && s.elem != nil && c.lru.Len() > c.capacity {
		c.lru.Remove(s.elem)
		s.elem = nil
		s.detach()
		c.evicts++
	}
}

// markWritableIfClosed marks the indexes of s writable when its files are closed (the
// next attach maps them for appends) and reports whether they were. A
// closed segment is in no list, so the cache does not touch it meanwhile.
func (c *FileCache) markWritableIfClosed(s *segment) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.elem != nil || s.refs > 0 || s.forgotten {
		return false
	}
	s.offsetIndex.writable, s.timeIndex.writable = true, true
	return true
}

// closeUnused closes the files of s unless it is pinned or has unsynced writes: Open
// uses it so that an idle replica keeps no descriptor or mapping (its first use opens
// them again).
func (c *FileCache) closeUnused(s *segment) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.elem == nil || s.refs > 0 || s.dirty {
		return
	}
	c.lru.Remove(s.elem)
	s.elem = nil
	s.detach()
	c.evicts++
}

// closed reports whether the cache has s's files closed (evicted, or never opened since
// its log was loaded). It may open them again at any time after.
func (c *FileCache) closed(s *segment) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return s.elem == nil && !s.held
}

// forget takes s out of the cache before its owner closes or deletes it; after it the
// cache never touches s again.
func (c *FileCache) forget(s *segment) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.elem != nil {
		c.lru.Remove(s.elem)
		s.elem = nil
	}
	s.forgotten = true
}

// testFiles, set by this package's tests (-segment.filecache), is the cache of every Log
// opened without one, so that the whole suite can run with segments evicted all the time.
var testFiles *FileCache

// rangePin is a FileRange's reference on its segment.
type rangePin struct {
	once sync.Once
	c    *FileCache
	s    *segment
}

// Release lets the cache close the range's file again. Call it once the range has been
// read or sent; later calls do nothing. A range from a Log without a cache, or an empty
// range, needs no release (it is a no-op).
func (r FileRange) Release() {
	if r.pin == nil {
		return
	}
	r.pin.once.Do(func() { r.pin.c.release(r.pin.s) })
}
