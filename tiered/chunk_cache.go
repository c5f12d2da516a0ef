package tiered

import (
	"container/list"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// ChunkCache keeps fixed-size chunks of remote segments' logs in files under a local
// directory, least recently used first out, within a byte bound: the read-ahead cache
// of remote reads (Aiven's fetch.chunk.cache.*, under rsm.config.). A chunk is the log's
// bytes [i*ChunkSize, (i+1)*ChunkSize), fetched with one ranged read through Downloads:
// a fetch runs to its end apart from the read that started it, one at a time a chunk.
// Safe for concurrent use; no lock is held across a store call or a file write.
type ChunkCache struct {
	dir       string
	chunkSize int64
	limit     int64
	downloads *Downloads

	mu    sync.Mutex // guards order, items, size and fetching
	order *list.List // of *chunkEntry, most recently used first
	items map[chunkKey]*list.Element
	size  int64
	// fetching are the chunks being fetched: a read of one waits for that fetch (a
	// consumer's next fetch often arrives while the read-ahead of its chunk runs, or
	// while the fetch an earlier one gave up on goes on).
	fetching map[chunkKey]*download
}

type chunkKey struct {
	segment Uuid
	index   int64
}

type chunkEntry struct {
	key  chunkKey
	size int64
}

// NewChunkCache empties dir (chunks of an earlier run are not trusted) and returns a
// cache of chunkSize-byte chunks holding at most limit bytes there, fetched through
// downloads; limit 0 caches nothing (every read goes to the store).
func NewChunkCache(dir string, chunkSize, limit int64, downloads *Downloads) (*ChunkCache, error) {
	if chunkSize <= 0 {
		return nil, fmt.Errorf("tiered: chunk size %d", chunkSize)
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &ChunkCache{dir: dir, chunkSize: chunkSize, limit: limit, downloads: downloads, order: list.New(),
		items: map[chunkKey]*list.Element{}, fetching: map[chunkKey]*download{}}, nil
}

// ChunkSize is the size of every chunk but a segment's last.
func (c *ChunkCache) ChunkSize() int64 { return c.chunkSize }

func (c *ChunkCache) path(k chunkKey) string {
	return filepath.Join(c.dir, fmt.Sprintf("%s-%d.chunk", k.segment, k.index))
}

// Cached reports whether chunk i of md is in the cache or being fetched.
func (c *ChunkCache) Cached(md *RemoteLogSegmentMetadata, i int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := chunkKey{md.SegmentID.ID, i}
	_, ok := c.items[key]
	_, fetching := c.fetching[key]
	return ok || fetching
}

// Get returns chunk i of md's log, from the cache or fetched from storage (and cached).
// A fetch of the chunk already in flight is joined rather than repeated; a new one
// waits for a download slot. Get waits until ctx ends, the fetch going on without it:
// a later Get finds the chunk cached, or joins the fetch.
func (c *ChunkCache) Get(ctx context.Context, storage RemoteStorageManager, md *RemoteLogSegmentMetadata, i int64) ([]byte, error) {
	return c.read(storage, md, i).get(ctx)
}

// Prefetch is a read-ahead of chunk i of md: it starts fetching it, unless the chunk
// is cached or being fetched, when a download slot is free at once (read-ahead leaves
// half of them to reads), and returns without waiting.
func (c *ChunkCache) Prefetch(storage RemoteStorageManager, md *RemoteLogSegmentMetadata, i int64) {
	c.read(storage, md, i).prefetch()
}

func (c *ChunkCache) read(storage RemoteStorageManager, md *RemoteLogSegmentMetadata, i int64) *cacheRead[chunkKey] {
	key := chunkKey{md.SegmentID.ID, i}
	return &cacheRead[chunkKey]{d: c.downloads, mu: &c.mu, inFlight: c.fetching, key: key, op: "fetchLogSegment",
		cached: func() ([]byte, bool) { return c.cached(key) },
		has:    func() bool { _, ok := c.items[key]; return ok },
		fetch:  func(ctx context.Context) ([]byte, error) { return c.fetch(ctx, storage, md, i) },
		keep:   func(data []byte) { c.put(key, data) },
	}
}

// Chunk is one chunk of a remote log to read from: its file in the cache (only the
// bytes read are read), or its bytes as fetched. Close releases the file.
type Chunk struct {
	f    *os.File
	data []byte
}

// ReadAt reads len(p) bytes of the chunk at off.
func (c *Chunk) ReadAt(p []byte, off int64) (int, error) {
	if c.f != nil {
		return c.f.ReadAt(p, off)
	}
	if off < 0 || off+int64(len(p)) > int64(len(c.data)) {
		return 0, io.ErrUnexpectedEOF
	}
	return copy(p, c.data[off:]), nil
}

// Close closes the chunk's file, if it was read from one.
func (c *Chunk) Close() error {
	if c.f != nil {
		return c.f.Close()
	}
	return nil
}

// Open returns chunk i of md's log to read from: its file when the cache holds it whole
// (a read of a few batches then costs those bytes, not the chunk's), else as Get.
// The chunk's size is min(ChunkSize, the log's size - i*ChunkSize).
func (c *ChunkCache) Open(ctx context.Context, storage RemoteStorageManager, md *RemoteLogSegmentMetadata, i int64) (*Chunk, error) {
	key := chunkKey{md.SegmentID.ID, i}
	c.mu.Lock()
	e, ok := c.items[key]
	if ok {
		c.order.MoveToFront(e)
	}
	c.mu.Unlock()
	if ok {
		want := min(c.chunkSize, int64(md.SegmentSizeInBytes)-i*c.chunkSize)
		if f, err := os.Open(c.path(key)); err == nil {
			if st, err := f.Stat(); err == nil && st.Size() == want {
				return &Chunk{f: f}, nil
			}
			f.Close()
		}
		c.forget(key) // evicted meanwhile, or the file is damaged: fetch it again
	}
	data, err := c.Get(ctx, storage, md, i)
	if err != nil {
		return nil, err
	}
	return &Chunk{data: data}, nil
}

// cached returns the chunk from its file, if the cache holds it.
func (c *ChunkCache) cached(key chunkKey) ([]byte, bool) {
	c.mu.Lock()
	e, ok := c.items[key]
	if ok {
		c.order.MoveToFront(e)
	}
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	data, err := os.ReadFile(c.path(key))
	if err != nil {
		c.forget(key) // evicted meanwhile, or the file is damaged: fetch it again
		return nil, false
	}
	return data, true
}

// fetch reads chunk i of md's log from storage.
func (c *ChunkCache) fetch(ctx context.Context, storage RemoteStorageManager, md *RemoteLogSegmentMetadata, i int64) ([]byte, error) {
	start := i * c.chunkSize
	end := min(start+c.chunkSize, int64(md.SegmentSizeInBytes)) - 1
	if end < start {
		return nil, fmt.Errorf("tiered: chunk %d of segment %s is past its %d bytes", i, md.SegmentID.ID, md.SegmentSizeInBytes)
	}
	rc, err := storage.FetchLogSegmentRange(ctx, md, start, end)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) != end-start+1 {
		return nil, fmt.Errorf("%w: chunk %d of segment %s: %d bytes, want %d", ErrRemoteStorage, i, md.SegmentID.ID, len(data), end-start+1)
	}
	return data, nil
}

// put writes a fetched chunk to its file and evicts the least recently used ones
// beyond the bound. A failed write only leaves the chunk uncached.
func (c *ChunkCache) put(key chunkKey, data []byte) {
	if int64(len(data)) > c.limit {
		return
	}
	f, err := os.CreateTemp(c.dir, "*.tmp")
	if err != nil {
		return
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), c.path(key))
	}
	if err != nil {
		os.Remove(f.Name())
		return
	}
	var evicted []chunkKey
	c.mu.Lock()
	if _, ok := c.items[key]; !ok {
		c.items[key] = c.order.PushFront(&chunkEntry{key, int64(len(data))})
		c.size += int64(len(data))
	}
	for c.size > c.limit {
		last := c.order.Back()
		e := last.Value.(*chunkEntry)
		c.order.Remove(last)
		delete(c.items, e.key)
		c.size -= e.size
		evicted = append(evicted, e.key)
	}
	c.mu.Unlock()
	for _, k := range evicted {
		os.Remove(c.path(k))
	}
}

func (c *ChunkCache) forget(key chunkKey) {
	c.mu.Lock()
	if e, ok := c.items[key]; ok {
		c.order.Remove(e)
		delete(c.items, key)
		c.size -= e.Value.(*chunkEntry).size
	}
	c.mu.Unlock()
}

// Size returns the bytes cached.
func (c *ChunkCache) Size() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}
