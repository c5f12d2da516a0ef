package tiered

import (
	"container/list"
	"context"
	"fmt"
	"io"
	"sync"
)

// IndexCache keeps remote segments' indexes in memory, least recently used first out,
// within a byte bound (Kafka's RemoteIndexCache, remote.log.index.file.cache.total.size.bytes,
// which Kafka keeps on disk; the indexes of a closed segment are small, a few KiB per
// MiB of log). Indexes are fetched through Downloads, like the ChunkCache's chunks: a
// fetch runs to its end apart from the read that started it, one at a time an index.
// Safe for concurrent use; no lock is held across a store call.
type IndexCache struct {
	limit     int64
	downloads *Downloads

	mu    sync.Mutex // guards order, items, size and fetching
	order *list.List // of *indexEntry, most recently used first
	items map[indexKey]*list.Element
	size  int64
	// fetching are the indexes being fetched: a read of one joins that fetch.
	fetching map[indexKey]*download
}

type indexKey struct {
	segment Uuid
	t       IndexType
}

type indexEntry struct {
	key  indexKey
	data []byte
}

// NewIndexCache returns a cache of at most limit bytes (at least one index is kept
// whatever its size, while it is in use), fetched through downloads.
func NewIndexCache(limit int64, downloads *Downloads) *IndexCache {
	return &IndexCache{limit: limit, downloads: downloads, order: list.New(), items: map[indexKey]*list.Element{},
		fetching: map[indexKey]*download{}}
}

// Get returns the index t of md, from the cache or fetched from storage (and cached),
// waiting for the fetch until ctx ends (the fetch goes on without it; see
// ChunkCache.Get).
func (c *IndexCache) Get(ctx context.Context, storage RemoteStorageManager, md *RemoteLogSegmentMetadata, t IndexType) ([]byte, error) {
	return c.read(storage, md, t).get(ctx)
}

// Prefetch is a read-ahead of the index t of md: see ChunkCache.Prefetch.
func (c *IndexCache) Prefetch(storage RemoteStorageManager, md *RemoteLogSegmentMetadata, t IndexType) {
	c.read(storage, md, t).prefetch()
}

func (c *IndexCache) read(storage RemoteStorageManager, md *RemoteLogSegmentMetadata, t IndexType) *cacheRead[indexKey] {
	key := indexKey{md.SegmentID.ID, t}
	return &cacheRead[indexKey]{d: c.downloads, mu: &c.mu, inFlight: c.fetching, key: key, op: "fetchIndex",
		cached: func() ([]byte, bool) { return c.cached(key) },
		has:    func() bool { _, ok := c.items[key]; return ok },
		fetch:  func(ctx context.Context) ([]byte, error) { return fetchIndex(ctx, storage, md, t) },
		keep:   func(data []byte) { c.put(key, data) },
	}
}

func (c *IndexCache) cached(key indexKey) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*indexEntry).data, true
}

// fetchIndex reads the index t of md from storage.
func fetchIndex(ctx context.Context, storage RemoteStorageManager, md *RemoteLogSegmentMetadata, t IndexType) ([]byte, error) {
	rc, err := storage.FetchIndex(ctx, md, t)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("reading the %s index of segment %s: %w", t, md.SegmentID.ID, err)
	}
	return data, nil
}

// put caches a fetched index, evicting the least recently used ones beyond the bound.
func (c *IndexCache) put(key indexKey, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[key]; ok {
		return
	}
	c.items[key] = c.order.PushFront(&indexEntry{key, data})
	c.size += int64(len(data))
	for c.size > c.limit && c.order.Len() > 1 {
		last := c.order.Back()
		e := last.Value.(*indexEntry)
		c.order.Remove(last)
		delete(c.items, e.key)
		c.size -= int64(len(e.data))
	}
}

// Size returns the bytes cached.
func (c *IndexCache) Size() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}
