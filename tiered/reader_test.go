package tiered

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/segment"
)

// objectStore is a RemoteStorageManager of byte objects by segment id, counting reads.
type objectStore struct {
	RemoteStorageManager
	logs    map[Uuid][]byte
	indexes map[Uuid]map[IndexType][]byte
	gets    atomic.Int64
	down    bool
	gate    chan struct{} // when set, log reads wait for it
	// hold, when set, makes log reads wait for it or for their ctx to end (a store
	// slower than its callers wait, cut off by the download's own deadline).
	hold chan struct{}
	// indexGate, when set, makes index reads wait for it.
	indexGate chan struct{}
}

func (s *objectStore) FetchLogSegmentRange(ctx context.Context, md *RemoteLogSegmentMetadata, start, end int64) (io.ReadCloser, error) {
	s.gets.Add(1)
	if s.gate != nil {
		<-s.gate
	}
	if s.hold != nil {
		select {
		case <-s.hold:
		case <-ctx.Done():
			return nil, &StorageError{Op: "fetchLogSegment", Err: ctx.Err()}
		}
	}
	if s.down {
		return nil, &StorageError{Op: "fetchLogSegment", Err: errors.New("store down")}
	}
	b := s.logs[md.SegmentID.ID]
	return io.NopCloser(bytes.NewReader(b[start:min(end+1, int64(len(b)))])), nil
}

func (s *objectStore) FetchIndex(_ context.Context, md *RemoteLogSegmentMetadata, t IndexType) (io.ReadCloser, error) {
	s.gets.Add(1)
	if s.indexGate != nil {
		<-s.indexGate
	}
	b, ok := s.indexes[md.SegmentID.ID][t]
	if !ok {
		return nil, &StorageError{Op: "fetchIndex", NotFound: true, Err: errors.New("NoSuchKey")}
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

// listMetadata is a RemoteLogMetadataManager over a fixed list.
type listMetadata struct {
	RemoteLogMetadataManager
	segs []*RemoteLogSegmentMetadata
}

func (m listMetadata) ListRemoteLogSegments(TopicIDPartition) []*RemoteLogSegmentMetadata {
	return m.segs
}
func (m listMetadata) RemoteLogSegmentMetadata(_ TopicIDPartition, epoch int32, offset int64) (*RemoteLogSegmentMetadata, bool) {
	return SegmentFor(m.segs, epoch, offset)
}

// testBatch is a stored v2 batch of n uncompressed records from base, record i with
// timestamp ts+i and a value of size bytes (the CRC is not set: nothing here checks it).
func testBatch(base int64, n int, ts int64, size int) []byte {
	var recs []byte
	for i := range n {
		var r []byte
		r = append(r, 0) // attributes
		r = binary.AppendVarint(r, int64(i))
		r = binary.AppendVarint(r, int64(i))
		r = binary.AppendVarint(r, -1)
		r = binary.AppendVarint(r, int64(size))
		r = append(r, bytes.Repeat([]byte{byte(base + int64(i))}, size)...)
		r = binary.AppendVarint(r, 0)
		recs = binary.AppendVarint(recs, int64(len(r)))
		recs = append(recs, r...)
	}
	b := make([]byte, 61, 61+len(recs))
	binary.BigEndian.PutUint64(b[0:], uint64(base))
	binary.BigEndian.PutUint32(b[8:], uint32(49+len(recs)))
	b[16] = 2
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))
	binary.BigEndian.PutUint64(b[27:], uint64(ts))
	binary.BigEndian.PutUint64(b[35:], uint64(ts+int64(n)-1))
	binary.BigEndian.PutUint64(b[43:], ^uint64(0))
	binary.BigEndian.PutUint32(b[57:], uint32(n))
	return append(b, recs...)
}

// testSegment stores a segment of batches of 5 records from start (10 batches, record
// i at time 1000+i), an offset index entry every other batch, a time index entry every
// batch, and returns it with its batches.
func testSegment(s *objectStore, id byte, start int64, epochs []EpochStart, txns []segment.AbortedTxn) (*RemoteLogSegmentMetadata, [][]byte) {
	md := &RemoteLogSegmentMetadata{SegmentID: RemoteLogSegmentID{ID: metadata.Uuid{id}}, StartOffset: start, EndOffset: start + 49,
		SegmentLeaderEpochs: epochs, State: CopySegmentFinished, MaxTimestampMs: 1000 + start + 49, TxnIdxEmpty: len(txns) == 0}
	var log, oix, tix []byte
	var batches [][]byte
	for k := range 10 {
		base := start + int64(5*k)
		b := testBatch(base, 5, 1000+base, 40)
		if k%2 == 0 {
			oix = binary.BigEndian.AppendUint32(oix, uint32(base-start))
			oix = binary.BigEndian.AppendUint32(oix, uint32(len(log)))
		}
		tix = binary.BigEndian.AppendUint64(tix, uint64(1000+base+4))
		tix = binary.BigEndian.AppendUint32(tix, uint32(base+4-start))
		log = append(log, b...)
		batches = append(batches, b)
	}
	md.SegmentSizeInBytes = int32(len(log))
	s.logs[md.SegmentID.ID] = log
	ix := map[IndexType][]byte{IndexOffset: oix, IndexTimestamp: tix,
		IndexLeaderEpoch: EpochCheckpoint(epochs, start+50), IndexProducerSnapshot: []byte("snapshot")}
	if len(txns) > 0 {
		var b []byte
		for _, a := range txns {
			b = segment.AppendTxnIndexEntry(b, a)
		}
		ix[IndexTransaction] = b
	}
	s.indexes[md.SegmentID.ID] = ix
	return md, batches
}

func newTestReader(t *testing.T, chunkSize, cacheSize int64) (*Reader, *objectStore, [][]byte) {
	s := &objectStore{logs: map[Uuid][]byte{}, indexes: map[Uuid]map[IndexType][]byte{}}
	md0, b0 := testSegment(s, 1, 0, []EpochStart{{0, 0}}, nil)
	md1, b1 := testSegment(s, 2, 50, []EpochStart{{0, 50}, {1, 70}}, []segment.AbortedTxn{{ProducerID: 7, FirstOffset: 45, LastOffset: 60, LastStableOffset: 61}})
	dir := t.TempDir()
	downloads := NewDownloads(16, 30*time.Second) // read-ahead of 8 at once
	t.Cleanup(downloads.Close)                    // before the directory goes
	chunks, err := NewChunkCache(dir, chunkSize, cacheSize, downloads)
	if err != nil {
		t.Fatal(err)
	}
	r := &Reader{Storage: s, Metadata: listMetadata{segs: []*RemoteLogSegmentMetadata{md0, md1}}, Indexes: NewIndexCache(1<<20, downloads), Chunks: chunks}
	return r, s, append(b0, b1...)
}

var testEpochs = []segment.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 70}}

// TestReaderReadsWholeBatches: a read starts at the batch holding the fetch offset
// (found through the offset index, batches below skipped), returns whole batches up
// to max bytes, the first whole even when larger with MinOneMessage (none without),
// across chunk edges, in either segment; an offset no segment holds is
// ErrRemoteSegmentNotFound.
func TestReaderReadsWholeBatches(t *testing.T) {
	r, _, batches := newTestReader(t, 100, 1<<20)
	size := len(batches[0])
	cases := []struct {
		offset   int64
		maxBytes int
		minOne   bool
		want     []int // batch indexes
	}{
		{0, 1 << 20, true, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}, // to the segment's end
		{7, 2 * size, true, []int{1, 2}},                        // index entry at 0: batch 0 skipped
		{13, 1, true, []int{2}},                                 // larger than max bytes: first whole
		{13, 1, false, nil},                                     // not the first partition: nothing
		{72, 3 * size, true, []int{14, 15, 16}},                 // the second segment, epoch 1
		{99, 1 << 20, true, []int{19}},
	}
	for _, c := range cases {
		res, err := r.Read(context.Background(), RemoteFetch{Epochs: testEpochs, FetchOffset: c.offset, MaxBytes: c.maxBytes, MinOneMessage: c.minOne})
		if err != nil {
			t.Fatalf("offset %d: %v", c.offset, err)
		}
		var want []byte
		for _, i := range c.want {
			want = append(want, batches[i]...)
		}
		if !bytes.Equal(res.Records, want) {
			t.Errorf("offset %d max %d: %d bytes, want batches %v (%d bytes)", c.offset, c.maxBytes, len(res.Records), c.want, len(want))
		}
	}
	if _, err := r.Read(context.Background(), RemoteFetch{Epochs: testEpochs, FetchOffset: 100, MaxBytes: 1000, MinOneMessage: true}); !errors.Is(err, ErrRemoteSegmentNotFound) {
		t.Fatalf("offset past the remote segments: %v, want ErrRemoteSegmentNotFound", err)
	}
}

// TestReaderChunkCacheAndReadAhead: a read fetches whole chunks once; the read-ahead
// warms the chunks after it (and, at a segment's end, the next segment's index and
// first chunks), so the next sequential read costs no store call; the cache keeps
// within its bound; with the store down an uncached read is ErrRemoteStorage.
func TestReaderChunkCacheAndReadAhead(t *testing.T) {
	r, s, batches := newTestReader(t, 256, 4096)
	r.PrefetchBytes = 1024
	r.Prefetch = func(fn func()) { fn() }
	size := len(batches[0])
	if _, err := r.Read(context.Background(), RemoteFetch{Epochs: testEpochs, FetchOffset: 0, MaxBytes: size, MinOneMessage: true}); err != nil {
		t.Fatal(err)
	}
	waitDownloads(t, r)
	before := s.gets.Load()
	r.Prefetch = nil // count the read's own calls only
	res, err := r.Read(context.Background(), RemoteFetch{Epochs: testEpochs, FetchOffset: 5, MaxBytes: 2 * size, MinOneMessage: true})
	if err != nil || !bytes.Equal(res.Records, append(append([]byte{}, batches[1]...), batches[2]...)) {
		t.Fatalf("sequential read: %v, %d bytes", err, len(res.Records))
	}
	if n := s.gets.Load() - before; n != 0 {
		t.Fatalf("the sequential read made %d store calls after the read-ahead, want 0", n)
	}
	if c := r.Chunks.Size(); c > 4096 || c == 0 {
		t.Fatalf("chunk cache holds %d bytes, bound 4096", c)
	}

	// A read to a segment's end warms the next segment's offset index and first chunks.
	r.Prefetch = func(fn func()) { fn() }
	if _, err := r.Read(context.Background(), RemoteFetch{Epochs: testEpochs, FetchOffset: 45, MaxBytes: 1 << 20, MinOneMessage: true}); err != nil {
		t.Fatal(err)
	}
	waitDownloads(t, r)
	before = s.gets.Load()
	r.Prefetch = nil
	if res, err := r.Read(context.Background(), RemoteFetch{Epochs: testEpochs, FetchOffset: 50, MaxBytes: size, MinOneMessage: true}); err != nil || !bytes.Equal(res.Records, batches[10]) {
		t.Fatalf("first batch of the next segment: %v, %d bytes", err, len(res.Records))
	}
	if n := s.gets.Load() - before; n != 0 {
		t.Fatalf("reading the next segment's start made %d store calls after the read-ahead, want 0", n)
	}

	s.down = true
	if _, err := r.Read(context.Background(), RemoteFetch{Epochs: testEpochs, FetchOffset: 95, MaxBytes: size, MinOneMessage: true}); !errors.Is(err, ErrRemoteStorage) {
		t.Fatalf("store down: %v, want ErrRemoteStorage", err)
	}
}

// TestReaderAbortedTransactions: read_committed gets the aborted transactions of the
// range from the transaction indexes of the segment read and of later ones (an abort
// whose marker is in the next segment); the walk is complete once an entry's last stable
// offset passes the range, incomplete when the remote segments end first.
func TestReaderAbortedTransactions(t *testing.T) {
	r, _, _ := newTestReader(t, 1<<20, 1<<20)
	want := []segment.AbortedTxn{{ProducerID: 7, FirstOffset: 45, LastOffset: 60, LastStableOffset: 61}}
	res, err := r.Read(context.Background(), RemoteFetch{Epochs: testEpochs, FetchOffset: 40, MaxBytes: 1 << 20, MinOneMessage: true, ReadCommitted: true})
	if err != nil || !reflect.DeepEqual(res.Aborted, want) || !res.AbortedComplete {
		t.Fatalf("read of [40, 50): %v, aborted %+v complete %v; want %+v complete", err, res.Aborted, res.AbortedComplete, want)
	}
	res, err = r.Read(context.Background(), RemoteFetch{Epochs: testEpochs, FetchOffset: 30, MaxBytes: 1, MinOneMessage: true, ReadCommitted: true})
	if err != nil || !reflect.DeepEqual(res.Aborted, []segment.AbortedTxn(nil)) || !res.AbortedComplete {
		t.Fatalf("read of [30, 35): %v, aborted %+v complete %v; want none, complete", err, res.Aborted, res.AbortedComplete)
	}
	res, err = r.Read(context.Background(), RemoteFetch{Epochs: testEpochs, FetchOffset: 90, MaxBytes: 1 << 20, MinOneMessage: true, ReadCommitted: true})
	if err != nil || len(res.Aborted) != 0 || res.AbortedComplete {
		t.Fatalf("read of [90, 100): %v, aborted %+v complete %v; want none, incomplete (the local log's to add)", err, res.Aborted, res.AbortedComplete)
	}
}

// TestReaderFindOffsetByTimestamp: the first record at or after the time, through the
// time and offset indexes, at or above the start offset; none past the remote data.
func TestReaderFindOffsetByTimestamp(t *testing.T) {
	r, _, _ := newTestReader(t, 128, 1<<20)
	cases := []struct {
		ts, start, want int64
		ok              bool
	}{
		{0, 0, 0, true}, {1000, 0, 0, true}, {1033, 0, 33, true}, {1033, 40, 40, true},
		{1077, 0, 77, true}, {1099, 0, 99, true}, {1100, 0, 0, false},
	}
	for _, c := range cases {
		got, ok, err := r.FindOffsetByTimestamp(context.Background(), TopicIDPartition{}, testEpochs, c.ts, c.start)
		if err != nil || ok != c.ok || (ok && (got.Offset != c.want || got.Timestamp < c.ts)) {
			t.Errorf("ts %d from %d: %+v %v %v, want offset %d %v", c.ts, c.start, got, ok, err, c.want, c.ok)
		}
	}
}

// TestReaderAuxState: a follower's state at the end of the segment of the epoch holding
// the offset: its next offset, leader epochs and producer snapshot.
func TestReaderAuxState(t *testing.T) {
	r, _, _ := newTestReader(t, 128, 1<<20)
	next, epochs, snap, err := r.AuxState(context.Background(), TopicIDPartition{}, 1, 99)
	if err != nil || next != 100 || string(snap) != "snapshot" ||
		!reflect.DeepEqual(epochs, []segment.EpochEntry{{Epoch: 0, StartOffset: 50}, {Epoch: 1, StartOffset: 70}}) {
		t.Fatalf("aux state: %d %+v %q %v", next, epochs, snap, err)
	}
	if _, _, _, err := r.AuxState(context.Background(), TopicIDPartition{}, 0, 99); !errors.Is(err, ErrRemoteSegmentNotFound) {
		t.Fatalf("offset 99 in epoch 0: %v, want ErrRemoteSegmentNotFound", err)
	}
}

// TestChunkCacheFetchesAChunkOnce: concurrent reads of a chunk being fetched wait for
// that fetch: one store call.
func TestChunkCacheFetchesAChunkOnce(t *testing.T) {
	r, s, _ := newTestReader(t, 256, 1<<20)
	s.gate = make(chan struct{})
	md := r.Metadata.ListRemoteLogSegments(TopicIDPartition{})[0]
	var wg sync.WaitGroup
	results := make([][]byte, 4)
	for k := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[k], _ = r.Chunks.Get(context.Background(), s, md, 1)
		}()
	}
	testwait.For(t, 10*time.Second, func() error {
		if !r.Chunks.Cached(md, 1) {
			return errors.New("no fetch in flight yet")
		}
		return nil
	})
	close(s.gate)
	wg.Wait()
	if n := s.gets.Load(); n != 1 {
		t.Fatalf("%d store calls for one chunk read 4 times at once, want 1", n)
	}
	for k, b := range results {
		if !bytes.Equal(b, s.logs[md.SegmentID.ID][256:512]) {
			t.Fatalf("read %d: %d bytes, not the chunk", k, len(b))
		}
	}
}
