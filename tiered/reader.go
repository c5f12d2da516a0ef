package tiered

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/petrel-broker/petrel/segment"
)

// ErrRemoteSegmentNotFound is a remote read of an offset no copied remote segment of
// the partition's leader-epoch lineage holds (remote retention deleted it, or it was
// never copied): Kafka's OffsetOutOfRangeException of RemoteLogManager.read.
var ErrRemoteSegmentNotFound = errors.New("tiered: no remote segment holds the offset")

// Reader is the read side of Kafka's RemoteLogManager: consumer fetches below the local
// log start (RemoteLogManager.read), time lookups (findOffsetByTimestamp) and a
// follower's auxiliary state (ReplicaFetcherTierStateMachine). Logs are read through a
// ChunkCache, indexes through an IndexCache. Synchronous and safe for concurrent use;
// the broker runs the reads on its remote.log.reader.threads goroutines.
type Reader struct {
	Storage  RemoteStorageManager
	Metadata RemoteLogMetadataManager
	Indexes  *IndexCache
	Chunks   *ChunkCache
	// Prefetch, when set, runs fn in the background if there is room (the broker's
	// reader pool); a read then warms the cache with the chunks after it (fn starts
	// their downloads, within the Downloads' read-ahead share, and returns).
	Prefetch func(fn func())
	// PrefetchBytes is how far past a read Prefetch warms the cache (Aiven's
	// fetch.chunk.cache.prefetch.max.size); 0: no read-ahead.
	PrefetchBytes int64
	// Decompress decompresses batches for time lookups (nil: batch granularity for
	// compressed batches).
	Decompress segment.Decompressor
}

// RemoteFetch is one partition's remote read.
type RemoteFetch struct {
	Partition TopicIDPartition
	// Epochs are the partition's leader-epoch cache entries (its lineage), ascending.
	Epochs        []segment.EpochEntry
	FetchOffset   int64
	MaxBytes      int
	MinOneMessage bool // the first batch whole even when larger than MaxBytes
	ReadCommitted bool
}

// RemoteFetchResult is what a remote read found.
type RemoteFetchResult struct {
	// Records are whole stored batches, the first holding FetchOffset; empty when the
	// first batch does not fit in MaxBytes and MinOneMessage is false.
	Records []byte
	// Aborted are the aborted transactions of the range read (ReadCommitted), from the
	// remote transaction indexes; AbortedComplete is false when the walk ran out of
	// remote segments before it found the range's end: the caller adds the local log's.
	Aborted         []segment.AbortedTxn
	AbortedComplete bool
	// NextOffset is the offset after the last batch read (FetchOffset when none).
	NextOffset int64
}

// epochsFrom returns the epoch of offset in the lineage and the later epochs, in order.
func epochsFrom(epochs []segment.EpochEntry, offset int64) []int32 {
	var out []int32
	for i, e := range epochs {
		if i+1 < len(epochs) && epochs[i+1].StartOffset <= offset {
			continue
		}
		out = append(out, e.Epoch)
	}
	return out
}

// segmentFor is Kafka's fetchRemoteLogSegmentMetadata over segs (the partition's
// remote segments, ascending): the copied segment holding offset in the offset's epoch
// of the lineage, or the first one of a later epoch that starts after it (the offset
// lies in an epoch gap).
func segmentFor(segs []*RemoteLogSegmentMetadata, tp TopicIDPartition, epochs []segment.EpochEntry, offset int64) (*RemoteLogSegmentMetadata, error) {
	for _, epoch := range epochsFrom(epochs, offset) {
		if md, ok := SegmentFor(segs, epoch, offset); ok {
			return md, nil
		}
		for _, md := range segs {
			if md.State == CopySegmentFinished && md.StartOffset > offset && hasEpoch(md, epoch) {
				return md, nil
			}
		}
	}
	return nil, fmt.Errorf("%w: %s-%d offset %d", ErrRemoteSegmentNotFound, tp.Topic, tp.Partition, offset)
}

func hasEpoch(md *RemoteLogSegmentMetadata, epoch int32) bool {
	for _, e := range md.SegmentLeaderEpochs {
		if e.Epoch == epoch {
			return true
		}
	}
	return false
}

// Read is Kafka's RemoteLogManager.read: the remote segment holding f.FetchOffset, the
// byte position of the nearest offset index entry at or below it, then whole batches
// from there, those below FetchOffset skipped, up to MaxBytes.
func (r *Reader) Read(ctx context.Context, f RemoteFetch) (RemoteFetchResult, error) {
	res := RemoteFetchResult{NextOffset: f.FetchOffset, AbortedComplete: true}
	segs := r.Metadata.ListRemoteLogSegments(f.Partition)
	md, err := segmentFor(segs, f.Partition, f.Epochs, f.FetchOffset)
	if err != nil {
		return res, err
	}
	pos, err := r.position(ctx, md, f.FetchOffset)
	if err != nil {
		return res, err
	}
	// The chunks after the first that MaxBytes may reach are fetched alongside: when
	// each takes longer than the fetch waits, the next fetch finds them all.
	cs := r.Chunks.ChunkSize()
	r.prefetchRange(md, pos/cs+1, pos+int64(f.MaxBytes)-(pos/cs+1)*cs)
	lr := r.logReader(ctx, md)
	defer lr.close()
	size := int64(md.SegmentSizeInBytes)
	for pos < size {
		hb, err := lr.readAt(pos, segment.BatchHeaderSize)
		if err != nil {
			return res, err
		}
		h, err := segment.ParseBatchHeader(hb)
		if err != nil {
			return res, fmt.Errorf("segment %s at byte %d: %w", md.SegmentID.ID, pos, err)
		}
		if h.LastOffset() < f.FetchOffset {
			pos += h.Size()
			continue
		}
		if len(res.Records)+int(h.Size()) > f.MaxBytes && (len(res.Records) > 0 || !f.MinOneMessage) {
			break
		}
		b, err := lr.readAt(pos, int(h.Size()))
		if err != nil {
			return res, err
		}
		res.Records = append(res.Records, b...)
		res.NextOffset = h.NextOffset()
		pos += h.Size()
	}
	r.prefetch(md, lr.last+1)
	if pos >= size {
		// Read to the segment's end: the consumer's next fetches are the next segments',
		// PrefetchBytes' worth of their starts.
		budget := r.PrefetchBytes
		for next := md; budget > 0; {
			if next, err = segmentFor(segs, f.Partition, f.Epochs, next.EndOffset+1); err != nil {
				err = nil
				break
			}
			r.prefetchSegment(next, budget)
			budget -= int64(next.SegmentSizeInBytes)
		}
	}
	if f.ReadCommitted && len(res.Records) > 0 {
		res.Aborted, res.AbortedComplete, err = r.abortedTxns(ctx, f.Partition, md, f.FetchOffset, res.NextOffset)
	}
	return res, err
}

// position is the byte position in md's log of the greatest offset index entry at or
// below offset (0 when none): Kafka's lookup of the remote offset index.
func (r *Reader) position(ctx context.Context, md *RemoteLogSegmentMetadata, offset int64) (int64, error) {
	ix, err := r.Indexes.Get(ctx, r.Storage, md, IndexOffset)
	if err != nil {
		return 0, err
	}
	n := validOffsetEntries(ix)
	i := sort.Search(n, func(i int) bool { return md.StartOffset+int64(binary.BigEndian.Uint32(ix[8*i:])) > offset })
	if i == 0 {
		return 0, nil
	}
	return int64(binary.BigEndian.Uint32(ix[8*(i-1)+4:])), nil
}

// validOffsetEntries is the number of offset index entries (8 bytes: relative offset,
// position) before the first that does not increase: a preallocated tail of zeros is
// not part of it.
func validOffsetEntries(ix []byte) int {
	n := len(ix) / 8
	for i := 1; i < n; i++ {
		if binary.BigEndian.Uint32(ix[8*i:]) <= binary.BigEndian.Uint32(ix[8*(i-1):]) {
			return i
		}
	}
	return n
}

// logReader reads md's log through the chunk cache, keeping the chunks of one read
// open; close releases them.
type logReader struct {
	ctx    context.Context
	r      *Reader
	md     *RemoteLogSegmentMetadata
	chunks map[int64]*Chunk
	last   int64 // the last chunk read, -1 before any
}

func (r *Reader) logReader(ctx context.Context, md *RemoteLogSegmentMetadata) *logReader {
	return &logReader{ctx: ctx, r: r, md: md, chunks: map[int64]*Chunk{}, last: -1}
}

func (lr *logReader) close() {
	for _, c := range lr.chunks {
		c.Close()
	}
}

// readAt returns n bytes of the log at pos.
func (lr *logReader) readAt(pos int64, n int) ([]byte, error) {
	if pos+int64(n) > int64(lr.md.SegmentSizeInBytes) {
		return nil, fmt.Errorf("%w: segment %s: %d bytes at %d past its %d bytes", segment.ErrInvalidBatch, lr.md.SegmentID.ID, n, pos, lr.md.SegmentSizeInBytes)
	}
	cs := lr.r.Chunks.ChunkSize()
	out := make([]byte, n)
	for k := 0; k < n; {
		i := pos / cs
		c, ok := lr.chunks[i]
		if !ok {
			var err error
			if c, err = lr.r.Chunks.Open(lr.ctx, lr.r.Storage, lr.md, i); err != nil {
				return nil, err
			}
			lr.chunks[i] = c
			lr.last = max(lr.last, i)
		}
		off := pos - i*cs
		take := min(int64(n-k), cs-off)
		if _, err := c.ReadAt(out[k:k+int(take)], off); err != nil {
			return nil, fmt.Errorf("%w: chunk %d of segment %s in the cache: %v", ErrRemoteStorage, i, lr.md.SegmentID.ID, err)
		}
		pos += take
		k += int(take)
	}
	return out, nil
}

// prefetch warms the cache with md's chunks from chunk first on, PrefetchBytes' worth.
func (r *Reader) prefetch(md *RemoteLogSegmentMetadata, first int64) {
	r.prefetchRange(md, first, r.PrefetchBytes)
}

// prefetchRange warms the cache with md's chunks from chunk first on, bytes' worth.
func (r *Reader) prefetchRange(md *RemoteLogSegmentMetadata, first, bytes int64) {
	if r.Prefetch == nil || bytes <= 0 || r.Chunks.limit == 0 {
		return
	}
	cs := r.Chunks.ChunkSize()
	last := min((first*cs+bytes-1)/cs, (int64(md.SegmentSizeInBytes)-1)/cs)
	for i := first; i <= last; i++ {
		if r.Chunks.Cached(md, i) {
			continue
		}
		r.Prefetch(func() { r.Chunks.Prefetch(r.Storage, md, i) })
	}
}

// prefetchSegment warms the cache with md's offset index and its first chunks, up to
// bytes.
func (r *Reader) prefetchSegment(md *RemoteLogSegmentMetadata, bytes int64) {
	if r.Prefetch == nil || r.PrefetchBytes <= 0 || r.Chunks.limit == 0 {
		return
	}
	r.Prefetch(func() { r.Indexes.Prefetch(r.Storage, md, IndexOffset) })
	r.prefetchRange(md, 0, bytes)
}

// abortedTxns is Kafka's RemoteLogManager.collectAbortedTransactions: the aborted
// transactions of [from, upTo) from the transaction index of md and of the remote
// segments after it, until an entry's last stable offset reaches upTo. Segments copied
// without a transaction index (TxnIdxEmpty) are not asked.
func (r *Reader) abortedTxns(ctx context.Context, tp TopicIDPartition, md *RemoteLogSegmentMetadata, from, upTo int64) ([]segment.AbortedTxn, bool, error) {
	var out []segment.AbortedTxn
	for _, s := range r.Metadata.ListRemoteLogSegments(tp) {
		if s.State != CopySegmentFinished || s.EndOffset < md.StartOffset || s.TxnIdxEmpty {
			continue
		}
		b, err := r.Indexes.Get(ctx, r.Storage, s, IndexTransaction)
		if errors.Is(err, ErrRemoteResourceNotFound) {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		txns, err := segment.ParseTxnIndex(b)
		if err != nil {
			return nil, false, err
		}
		for _, a := range txns {
			if a.LastOffset >= from && a.FirstOffset < upTo {
				out = append(out, a)
			}
			if a.LastStableOffset >= upTo {
				return out, true, nil
			}
		}
	}
	return out, false, nil
}

// FindOffsetByTimestamp is Kafka's RemoteLogManager.findOffsetByTimestamp: over the
// copied segments of the lineage whose max timestamp is at least ts and which end at or
// after startOffset, oldest first, the greatest time index entry at or below ts, its
// position by the offset index, then the first record from there with a timestamp at
// least ts and an offset at least startOffset.
func (r *Reader) FindOffsetByTimestamp(ctx context.Context, tp TopicIDPartition, epochs []segment.EpochEntry, ts, startOffset int64) (segment.TimestampOffset, bool, error) {
	segs := r.Metadata.ListRemoteLogSegments(tp)
	for _, md := range segs {
		if md.State != CopySegmentFinished || md.MaxTimestampMs < ts || md.EndOffset < startOffset {
			continue
		}
		if in, err := segmentFor(segs, tp, epochs, max(md.StartOffset, startOffset)); err != nil || in.SegmentID != md.SegmentID {
			continue // not of the lineage
		}
		tix, err := r.Indexes.Get(ctx, r.Storage, md, IndexTimestamp)
		if err != nil {
			return segment.TimestampOffset{}, false, err
		}
		from := max(md.StartOffset, startOffset, timeIndexFloor(tix, md.StartOffset, ts))
		pos, err := r.position(ctx, md, from)
		if err != nil {
			return segment.TimestampOffset{}, false, err
		}
		lr := r.logReader(ctx, md)
		found, ok, err := r.findInSegment(lr, md, pos, ts, startOffset)
		lr.close()
		if err != nil || ok {
			return found, ok, err
		}
	}
	return segment.TimestampOffset{}, false, nil
}

// findInSegment is FindOffsetByTimestamp's walk of md's batches from pos.
func (r *Reader) findInSegment(lr *logReader, md *RemoteLogSegmentMetadata, pos, ts, startOffset int64) (segment.TimestampOffset, bool, error) {
	for pos < int64(md.SegmentSizeInBytes) {
		hb, err := lr.readAt(pos, segment.BatchHeaderSize)
		if err != nil {
			return segment.TimestampOffset{}, false, err
		}
		h, err := segment.ParseBatchHeader(hb)
		if err != nil {
			return segment.TimestampOffset{}, false, err
		}
		if h.LastOffset() >= startOffset && h.MaxTimestamp >= ts {
			b, err := lr.readAt(pos, int(h.Size()))
			if err != nil {
				return segment.TimestampOffset{}, false, err
			}
			if found, ok, err := segment.RecordAtOrAfterTimestamp(b, ts, startOffset, r.Decompress); err != nil || ok {
				return found, ok, err
			}
		}
		pos += h.Size()
	}
	return segment.TimestampOffset{}, false, nil
}

// timeIndexFloor is the offset of the greatest time index entry (12 bytes: timestamp,
// relative offset) whose timestamp is at most ts, or base.
func timeIndexFloor(ix []byte, base, ts int64) int64 {
	n := len(ix) / 12
	at := func(i int) (int64, int64) {
		return int64(binary.BigEndian.Uint64(ix[12*i:])), base + int64(binary.BigEndian.Uint32(ix[12*i+8:]))
	}
	floor := base
	for i := 0; i < n; i++ {
		t, off := at(i)
		if t > ts || (i > 0 && off <= floor) {
			break
		}
		floor = off
	}
	return floor
}

// AuxState is what a follower needs to start its log after the remote segment of
// leaderEpoch holding offset: the segment's end, its leader-epoch checkpoint and its
// producer snapshot (Kafka's ReplicaFetcherTierStateMachine.buildRemoteLogAuxState).
func (r *Reader) AuxState(ctx context.Context, tp TopicIDPartition, leaderEpoch int32, offset int64) (nextOffset int64, epochs []segment.EpochEntry, snapshot []byte, err error) {
	md, ok := r.Metadata.RemoteLogSegmentMetadata(tp, leaderEpoch, offset)
	if !ok {
		return 0, nil, nil, fmt.Errorf("%w: %s-%d offset %d in epoch %d", ErrRemoteSegmentNotFound, tp.Topic, tp.Partition, offset, leaderEpoch)
	}
	cp, err := r.Indexes.Get(ctx, r.Storage, md, IndexLeaderEpoch)
	if err != nil {
		return 0, nil, nil, err
	}
	if epochs, err = ParseEpochCheckpoint(cp); err != nil {
		return 0, nil, nil, err
	}
	snapshot, err = r.Indexes.Get(ctx, r.Storage, md, IndexProducerSnapshot)
	if errors.Is(err, ErrRemoteResourceNotFound) {
		snapshot, err = nil, nil
	}
	return md.EndOffset + 1, epochs, snapshot, err
}

// ParseEpochCheckpoint reads a leader-epoch checkpoint file (EpochCheckpoint's format).
func ParseEpochCheckpoint(b []byte) ([]segment.EpochEntry, error) {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) < 2 || lines[0] != "0" {
		return nil, fmt.Errorf("%w: leader-epoch checkpoint header", ErrInvalidMetadata)
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n != len(lines)-2 {
		return nil, fmt.Errorf("%w: leader-epoch checkpoint of %d entries, %d lines", ErrInvalidMetadata, n, len(lines)-2)
	}
	out := make([]segment.EpochEntry, 0, n)
	for _, l := range lines[2:] {
		var e segment.EpochEntry
		if _, err := fmt.Sscanf(l, "%d %d", &e.Epoch, &e.StartOffset); err != nil {
			return nil, fmt.Errorf("%w: leader-epoch checkpoint line %q", ErrInvalidMetadata, l)
		}
		out = append(out, e)
	}
	return out, nil
}
