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
// MiB of log). Safe for concurrent use; no lock is held across a store call: two
// readers missing the same index both fetch it.
type IndexCache struct {
	limit int64

	mu    sync.Mutex // guards order, items and size
	order *list.List // of *indexEntry, most recently used first
	items map[indexKey]*list.Element
	size  int64
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
// whatever its size, while it is in use).
func NewIndexCache(limit int64) *IndexCache {
	return &IndexCache{limit: limit, order: list.New(), items: map[indexKey]*list.Element{}}
}

// Get returns the index t of md, from the cache or fetched from storage.
func (c *IndexCache) Get(ctx context.Context, storage RemoteStorageManager, md *RemoteLogSegmentMetadata, t IndexType) ([]byte, error) {
	key := indexKey{md.SegmentID.ID, t}
	c.mu.Lock()
	if e, ok := c.items[key]; ok {
		c.order.MoveToFront(e)
		data := e.Value.(*indexEntry).data
		c.mu.Unlock()
		return data, nil
	}
	c.mu.Unlock()
	rc, err := storage.FetchIndex(ctx, md, t)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("reading the %s index of segment %s: %w", t, md.SegmentID.ID, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[key]; !ok {
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
	return data, nil
}

// Size returns the bytes cached.
func (c *IndexCache) Size() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}
