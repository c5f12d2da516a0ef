package tiered

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
)

// shortCtx is a reader's wait that ends before the store answers (the store is held
// by a gate until the read has given up, so the order does not depend on timing).
func shortCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	t.Cleanup(cancel)
	return ctx
}

// TestChunkCacheFetchOutlivesTheReadersWait (P23): a chunk fetch slower than the read
// that started it waits goes on; the read answers its ctx error, and a later read gets
// the chunk without a second store call (joining the fetch or finding it cached).
func TestChunkCacheFetchOutlivesTheReadersWait(t *testing.T) {
	r, s, _ := newTestReader(t, 256, 1<<20)
	s.gate = make(chan struct{})
	md := r.Metadata.ListRemoteLogSegments(TopicIDPartition{})[0]
	if _, err := r.Chunks.Get(shortCtx(t), s, md, 1); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrRemoteStorage) {
		t.Fatalf("read past its wait: %v, want a storage error of context.DeadlineExceeded", err)
	}
	close(s.gate)
	for k := range 2 {
		got, err := r.Chunks.Get(context.Background(), s, md, 1)
		if err != nil || !bytes.Equal(got, s.logs[md.SegmentID.ID][256:512]) {
			t.Fatalf("read %d after the store answered: %v, %d bytes, want the chunk", k+2, err, len(got))
		}
	}
	if n := s.gets.Load(); n != 1 {
		t.Fatalf("%d store calls, want 1: the fetch the first read gave up on was not kept", n)
	}
	if r.Chunks.Size() != 256 {
		t.Fatalf("chunk cache holds %d bytes, want the chunk's 256", r.Chunks.Size())
	}
}

// TestIndexCacheFetchOutlivesTheReadersWait: the same for an index.
func TestIndexCacheFetchOutlivesTheReadersWait(t *testing.T) {
	r, s, _ := newTestReader(t, 256, 1<<20)
	s.indexGate = make(chan struct{})
	md := r.Metadata.ListRemoteLogSegments(TopicIDPartition{})[0]
	if _, err := r.Indexes.Get(shortCtx(t), s, md, IndexOffset); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("index read past its wait: %v, want context.DeadlineExceeded", err)
	}
	close(s.indexGate)
	got, err := r.Indexes.Get(context.Background(), s, md, IndexOffset)
	if err != nil || !bytes.Equal(got, s.indexes[md.SegmentID.ID][IndexOffset]) {
		t.Fatalf("index read after the store answered: %v, %d bytes", err, len(got))
	}
	if n := s.gets.Load(); n != 1 {
		t.Fatalf("%d store calls, want 1", n)
	}
}

// TestDownloadsAreBounded: no more than the bound run at once: a read that needs
// another waits for a slot until its ctx ends, starting nothing; read-ahead takes a
// slot only while half are free; once the store answers, reads go on.
func TestDownloadsAreBounded(t *testing.T) {
	s := &objectStore{logs: map[Uuid][]byte{}, indexes: map[Uuid]map[IndexType][]byte{}, gate: make(chan struct{})}
	md, _ := testSegment(s, 1, 0, []EpochStart{{0, 0}}, nil)
	dir := t.TempDir()
	d := NewDownloads(2, 30*time.Second)
	t.Cleanup(d.Close) // before the directory goes
	c, err := NewChunkCache(dir, 64, 1<<20, d)
	if err != nil {
		t.Fatal(err)
	}
	c.Prefetch(s, md, 0) // one of two slots free: read-ahead takes it
	if _, err := c.Get(shortCtx(t), s, md, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("read of chunk 1: %v, want context.DeadlineExceeded", err)
	}
	if n := d.InFlight(); n != 2 {
		t.Fatalf("%d downloads in flight, want 2", n)
	}
	if _, err := c.Get(shortCtx(t), s, md, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("read of chunk 2 with every slot taken: %v, want context.DeadlineExceeded", err)
	}
	c.Prefetch(s, md, 3) // no slot: starts nothing
	if n := s.gets.Load(); n != 2 {
		t.Fatalf("%d store calls with 2 slots, want 2", n)
	}
	close(s.gate)
	for i := range int64(4) {
		if got, err := c.Get(context.Background(), s, md, i); err != nil || len(got) != 64 {
			t.Fatalf("chunk %d once the store answers: %v, %d bytes", i, err, len(got))
		}
	}
	if n := s.gets.Load(); n != 4 {
		t.Fatalf("%d store calls for 4 chunks, want 4", n)
	}
	// With one slot of two taken, read-ahead leaves the other to reads.
	s.gate = make(chan struct{})
	defer close(s.gate)
	c.Get(shortCtx(t), s, md, 5) //nolint:errcheck // gives up; the download holds a slot
	c.Prefetch(s, md, 6)
	if n, in := s.gets.Load(), d.InFlight(); n != 5 || in != 1 {
		t.Fatalf("read-ahead with half the slots taken: %d store calls, %d in flight; want 5 and 1", n, in)
	}
}

// TestDownloadsEndByTheirDeadlineAndClose: a download the store never answers ends at
// its own deadline (a storage error; nothing cached, the next read tries again), and
// Close ends those in flight and refuses new ones.
func TestDownloadsEndByTheirDeadlineAndClose(t *testing.T) {
	s := &objectStore{logs: map[Uuid][]byte{}, indexes: map[Uuid]map[IndexType][]byte{}, hold: make(chan struct{})}
	md, _ := testSegment(s, 1, 0, []EpochStart{{0, 0}}, nil)
	d := NewDownloads(2, 100*time.Millisecond)
	c, err := NewChunkCache(t.TempDir(), 64, 1<<20, d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(context.Background(), s, md, 0); !errors.Is(err, ErrRemoteStorage) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a download past its deadline: %v, want a storage error of context.DeadlineExceeded", err)
	}
	d.timeout = time.Hour
	if _, err := c.Get(shortCtx(t), s, md, 0); !errors.Is(err, context.DeadlineExceeded) || s.gets.Load() != 2 || d.InFlight() != 1 {
		t.Fatalf("the next read: %v, %d store calls, %d in flight; want its wait's end, 2, 1", err, s.gets.Load(), d.InFlight())
	}
	d.Close() // returns once the held download has ended
	if n := d.InFlight(); n != 0 {
		t.Fatalf("%d downloads in flight after Close", n)
	}
	if _, err := c.Get(context.Background(), s, md, 1); !errors.Is(err, ErrDownloadsClosed) {
		t.Fatalf("a read after Close: %v, want ErrDownloadsClosed", err)
	}
}

// waitDownloads waits for r's downloads in flight (read-ahead) to end.
func waitDownloads(t *testing.T, r *Reader) {
	t.Helper()
	testwait.For(t, 10*time.Second, func() error {
		if n := r.Chunks.downloads.InFlight(); n > 0 {
			return fmt.Errorf("%d downloads in flight", n)
		}
		return nil
	})
}

// TestChunkCacheOpenReadsTheCachedFile: a cached chunk is read from its file without a
// store call; a damaged (short) file is fetched again, not served.
func TestChunkCacheOpenReadsTheCachedFile(t *testing.T) {
	r, s, _ := newTestReader(t, 256, 1<<20)
	md := r.Metadata.ListRemoteLogSegments(TopicIDPartition{})[0]
	want := s.logs[md.SegmentID.ID][256:512]
	read := func() []byte {
		t.Helper()
		c, err := r.Chunks.Open(context.Background(), s, md, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		got := make([]byte, 100)
		if _, err := c.ReadAt(got, 50); err != nil {
			t.Fatal(err)
		}
		return got
	}
	for k := range 2 {
		if got := read(); !bytes.Equal(got, want[50:150]) {
			t.Fatalf("read %d of bytes [50, 150) of chunk 1: not the log's", k+1)
		}
	}
	if n := s.gets.Load(); n != 1 {
		t.Fatalf("%d store calls for two reads of a chunk, want 1", n)
	}
	if err := os.Truncate(r.Chunks.path(chunkKey{md.SegmentID.ID, 1}), 10); err != nil {
		t.Fatal(err)
	}
	if got := read(); !bytes.Equal(got, want[50:150]) || s.gets.Load() != 2 {
		t.Fatalf("read of a damaged chunk file: %d store calls, bytes equal %v; want fetched again", s.gets.Load(), bytes.Equal(got, want[50:150]))
	}
}
