package replication

// Replica verification (docs/verify.md): a replica digests its committed batches so that
// two replicas can tell, without moving the data, whether they hold the same bytes. A
// batch's digest input is its first 21 bytes as stored (base offset, batch length,
// partition leader epoch, magic, the stored CRC) and the CRC-32C computed now over the
// rest (attributes to the last record): every byte of the batch counts, and a byte
// flipped on disk after the CRC was checked changes the digest although the stored CRC
// does not. Batches are grouped into chunks by a size rule alone, so that two replicas
// with the same batches from the same start cut the same chunks.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"

	"github.com/petrel-broker/petrel/segment"
)

// digestReadPiece is the most one read under the partition lock copies.
const digestReadPiece = 1 << 20

// digestHeaderBytes is the stored prefix of a batch hashed as is: up to the CRC.
const digestHeaderBytes = 21

// ChunkDigest is the digest of consecutive batches of a replica's committed log.
type ChunkDigest struct {
	BaseOffset int64  // the first batch's base offset
	LastOffset int64  // the last batch's last offset
	Batches    int32  // how many batches
	Hash       uint64 // FNV-1a over each batch's stored prefix and computed CRC
	// Cut: the chunk ended at the range's end or the byte budget, not at the chunk size;
	// another replica may cut the same batches later.
	Cut bool
}

// ReplicaDigests is a replica's answer for a range of its committed log.
type ReplicaDigests struct {
	HighWatermark int64
	// LogStartOffset is the first offset the replica can digest: its log start offset,
	// or its local log start offset when higher (tiered storage).
	LogStartOffset int64
	LeaderEpoch    int32
	Leader         int32 // the leader's broker id as this replica knows it; -1 none
	IsLeader       bool
	// Compacted: the log's configuration is Compacted, which the broker keeps set for a
	// log its cleaner has ever cleaned (cleaner-offset-checkpoint has it) whatever
	// cleanup.policy is now: its replicas are cleaned each on its own and may differ.
	Compacted bool
	// Next is the offset after the last digested batch (the start when none was):
	// where the next range starts.
	Next   int64
	Chunks []ChunkDigest
	// Scanned counts the bytes digested.
	Scanned int64
	// Short: the digest stopped before its range's end because the replica stopped or
	// retention removed the batches meanwhile (not sent on the wire).
	Short bool
}

// ErrDigestCorrupt means a committed batch could not be digested: its header or its
// bytes on disk cannot be read as a batch. It wraps the offset and the cause.
var ErrDigestCorrupt = errors.New("replication: a committed batch cannot be read")

// Digests digests the committed batches of [start, end), from the batch that holds
// max(start, log start offset), up to min(end, high watermark): whole batches only, a
// chunk closing once it holds chunkBytes, stopping after the chunk that reaches
// maxBytes or makes maxChunks (at least one batch is digested when any is in range). A
// compacted log is answered with its offsets only (Compacted set, no chunks).
func (p *Partition) Digests(start, end int64, chunkBytes, maxBytes int64, maxChunks int) (ReplicaDigests, error) {
	d, upTo, err := p.digestState(start, end)
	if err != nil || d.Compacted {
		return d, err
	}
	pos := d.Next
	var cur *ChunkDigest
	var curBytes int64
	h := fnv.New64a()
	var crc [4]byte
	closeChunk := func(cut bool) {
		if cur != nil {
			cur.Hash, cur.Cut = h.Sum64(), cut
			d.Chunks = append(d.Chunks, *cur)
			cur, curBytes = nil, 0
			h.Reset()
		}
	}
	bufp := digestBuffers.Get().(*[]byte)
	defer func() {
		if cap(*bufp) == digestReadPiece { // one grown for a large batch is dropped
			digestBuffers.Put(bufp)
		}
	}()
	for pos < upTo && ((d.Scanned < maxBytes && len(d.Chunks) < maxChunks) || cur != nil) {
		buf, err := p.readCommitted(pos, upTo, bufp)
		if err != nil {
			if errors.Is(err, segment.ErrOffsetOutOfRange) || errors.Is(err, ErrPartitionStopped) {
				d.Short = true
				break // retention or a stop meanwhile: answer what was digested
			}
			return d, corruptAt(pos, err)
		}
		if len(buf) == 0 {
			break
		}
		first := true
		for len(buf) >= segment.BatchHeaderSize {
			hdr, err := segment.ParseBatchHeader(buf[:segment.BatchHeaderSize])
			if err != nil {
				return d, corruptAt(pos, err)
			}
			size := hdr.Size()
			if size < segment.BatchHeaderSize || (first && size > int64(len(buf))) ||
				hdr.BaseOffset > pos || hdr.LastOffset() < pos {
				// A read returns whole batches from the one holding pos: a batch that is
				// not one, or does not hold the next offset, is a damaged header.
				return d, corruptAt(pos, fmt.Errorf("%w: batch of %d bytes at offsets %d-%d", segment.ErrCorruptBatch,
					size, hdr.BaseOffset, hdr.LastOffset()))
			}
			if size > int64(len(buf)) {
				break
			}
			first = false
			if cur == nil {
				cur = &ChunkDigest{BaseOffset: hdr.BaseOffset}
			}
			h.Write(buf[:digestHeaderBytes])
			binary.BigEndian.PutUint32(crc[:], segment.CRC32C(buf[digestHeaderBytes:size]))
			h.Write(crc[:])
			cur.LastOffset, cur.Batches = hdr.LastOffset(), cur.Batches+1
			curBytes += size
			d.Scanned += size
			pos = hdr.NextOffset()
			buf = buf[size:]
			if curBytes >= chunkBytes {
				closeChunk(false)
				if d.Scanned >= maxBytes || len(d.Chunks) >= maxChunks {
					break
				}
			}
		}
		if cur == nil && (d.Scanned >= maxBytes || len(d.Chunks) >= maxChunks) {
			break
		}
	}
	closeChunk(true)
	d.Next = pos
	return d, nil
}

// corruptAt wraps a failure to digest the batch holding offset as ErrDigestCorrupt.
func corruptAt(offset int64, err error) error {
	return fmt.Errorf("%w at offset %d: %w", ErrDigestCorrupt, offset, err)
}

// digestState snapshots what Digests answers besides its chunks, and the offset it
// digests up to.
func (p *Partition) digestState(start, end int64) (ReplicaDigests, int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role == Stopped {
		return ReplicaDigests{}, 0, ErrPartitionStopped
	}
	// Digests start where this replica has local batches: above the log start offset
	// and the local one (tiered storage moved the older ones to remote storage).
	d := ReplicaDigests{HighWatermark: p.highWatermark, LogStartOffset: max(p.log.LogStartOffset(), p.log.LocalLogStartOffset()),
		LeaderEpoch: p.leaderEpoch, Leader: p.leader, IsLeader: p.role == Leader,
		Compacted: p.log.Config().Compacted}
	d.Next = max(start, d.LogStartOffset)
	return d, min(end, p.highWatermark), nil
}

// digestBuffers are the read buffers of Digests, digestReadPiece each, reused across
// calls so that a verification pass does not allocate a MiB per read.
var digestBuffers = sync.Pool{New: func() any { b := make([]byte, digestReadPiece); return &b }}

// readCommitted reads whole batches from the one holding offset, below upTo, up to
// digestReadPiece (at least one batch) into *buf (grown when one batch is larger). The
// range is pinned under the lock, like a fetch's, and read outside it.
func (p *Partition) readCommitted(offset, upTo int64, buf *[]byte) ([]byte, error) {
	h, err := p.holdCommitted(offset, upTo)
	if err != nil || h == nil {
		return nil, err
	}
	defer h.Release()
	if int64(cap(*buf)) < h.Size {
		*buf = make([]byte, h.Size)
	}
	b := (*buf)[:h.Size]
	if _, err := h.File.ReadAt(b, h.Position); err != nil {
		return nil, fmt.Errorf("reading %s at %d: %w", h.File.Name(), h.Position, err)
	}
	return b, nil
}

// holdCommitted pins the committed range readCommitted reads (nil when empty).
func (p *Partition) holdCommitted(offset, upTo int64) (*segment.Hold, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role == Stopped {
		return nil, ErrPartitionStopped
	}
	r, err := p.log.Read(offset, digestReadPiece, min(upTo, p.highWatermark))
	if err != nil {
		return nil, err
	}
	return r.Hold(), nil
}
