package segment

import (
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Compressor compresses a records section with codec (1 gzip, 2 snappy, 3 lz4, 4 zstd)
// for the cleaner, which rewrites compressed batches with their own codec. The broker
// supplies one; this package imports no codecs.
type Compressor func(codec int8, raw []byte) ([]byte, error)

// attributeDeleteHorizon marks a batch whose baseTimestamp is its delete horizon
// (KIP-534): the time after which the cleaner removes its tombstones.
const attributeDeleteHorizon = 0x40

// offsetMapEntryBytes is what one key costs in Kafka's SkimpyOffsetMap: an MD5 hash of
// the key and an 8-byte offset. log.cleaner.dedupe.buffer.size is counted in these.
const offsetMapEntryBytes = md5.Size + 8

// offsetMap maps the MD5 hash of a key to the latest offset at which it was seen in the
// dirty section, as Kafka's cleaner does; it holds at most max keys.
type offsetMap struct {
	m      map[[md5.Size]byte]int64
	max    int
	latest int64 // the largest offset put; -1 when empty
}

func newOffsetMap(maxBytes int64) *offsetMap {
	n := int(min(maxBytes/offsetMapEntryBytes*9/10, 1<<30)) // Kafka's load factor 0.9
	return &offsetMap{m: map[[md5.Size]byte]int64{}, max: max(n, 1), latest: -1}
}

func (m *offsetMap) put(key []byte, offset int64) {
	m.m[md5.Sum(key)] = offset
	m.latest = max(m.latest, offset)
}

func (m *offsetMap) get(key []byte) (int64, bool) {
	o, ok := m.m[md5.Sum(key)]
	return o, ok
}

// record is one record of a batch as the cleaner sees it: where it lies in the records
// section and the fields that decide whether it stays.
type record struct {
	raw         []byte // the whole record, its length varint included
	attrs       byte
	tsDelta     int64
	offsetDelta int32
	rest        []byte // key, value and headers, as encoded
	key         []byte // nil for a null key
	tombstone   bool   // null value
}

// parseRecords decodes count records of an uncompressed records section.
func parseRecords(b []byte, count int32, out []record) ([]record, error) {
	out = out[:0]
	for i := int32(0); i < count; i++ {
		length, n := binary.Varint(b)
		if n <= 0 || length < 1 || int64(len(b)-n) < length {
			return out, fmt.Errorf("%w: record %d has a bad length", ErrInvalidRecord, i)
		}
		r := record{raw: b[:n+int(length)]}
		body := b[n : n+int(length)]
		b = b[n+int(length):]
		r.attrs = body[0]
		body = body[1:]
		var m int
		if r.tsDelta, m = binary.Varint(body); m <= 0 {
			return out, fmt.Errorf("%w: record %d has a bad timestamp delta", ErrInvalidRecord, i)
		}
		body = body[m:]
		od, m := binary.Varint(body)
		if m <= 0 || od < 0 || od > 1<<31-1 {
			return out, fmt.Errorf("%w: record %d has a bad offset delta", ErrInvalidRecord, i)
		}
		r.offsetDelta = int32(od)
		body = body[m:]
		r.rest = body
		kl, m := binary.Varint(body)
		if m <= 0 || kl < -1 || kl > int64(len(body)-m) {
			return out, fmt.Errorf("%w: record %d has a bad key length", ErrInvalidRecord, i)
		}
		body = body[m:]
		if kl >= 0 {
			r.key = body[:kl]
			body = body[kl:]
		}
		vl, m := binary.Varint(body)
		if m <= 0 || vl < -1 || vl > int64(len(body)-m) {
			return out, fmt.Errorf("%w: record %d has a bad value length", ErrInvalidRecord, i)
		}
		r.tombstone = vl < 0
		out = append(out, r)
	}
	return out, nil
}

// recordsSection returns the batch's records, decompressed. ok is false when the batch
// is compressed and the cleaner has no codec for it: such a batch is kept whole.
func (p *CleanPlan) recordsSection(b []byte, h BatchHeader) (raw []byte, ok bool, err error) {
	if h.Codec() == 0 {
		return b[BatchHeaderSize:], true, nil
	}
	if p.opts.Decompress == nil || p.opts.Compress == nil {
		return nil, false, nil
	}
	raw, err = p.opts.Decompress(h.Codec(), b[BatchHeaderSize:])
	if err != nil {
		return nil, false, fmt.Errorf("%w: batch at offset %d: %w", ErrUndecodableRecords, h.BaseOffset, err)
	}
	return raw, true, nil
}

// filterBatch decides what of the batch b (header h) survives cleaning and appends it to
// out, by Kafka's rules (LogCleaner's filter over MemoryRecords.filterTo):
//
//   - A data batch of an aborted transaction loses its records. Otherwise a record
//     stays when it has a key, no later offset of its key is in the offset map, and it
//     is not a tombstone past its delete horizon.
//   - A transaction marker stays while its transaction has batches left before it; once
//     none is left it gets a delete horizon (now + delete.retention.ms) and goes when
//     the horizon passes.
//   - A batch left with no record is removed, unless it holds its active producer's last
//     sequence and epoch (ProducerLastRecord): that one stays as an empty batch with
//     Kafka's layout. An empty batch without a producer id is never written.
//
// A batch keeping all its records (and needing no new horizon) is copied byte for byte.
// Batches at or past the end of the offset map are copied whole; the walker still reads
// them. Without codecs a compressed batch is copied whole too.
func (p *CleanPlan) filterBatch(out, b []byte, h BatchHeader, walker *txnWalker) ([]byte, error) {
	if h.Control() {
		return p.filterControlBatch(out, b, h, walker)
	}
	aborted := walker.dataBatch(h)
	if h.BaseOffset >= p.endOffset {
		return append(out, b...), nil
	}
	if aborted || h.RecordCount == 0 {
		p.Result.RecordsRemoved += int64(h.RecordCount)
		return p.emptyOrNothing(out, h), nil
	}
	raw, ok, err := p.recordsSection(b, h)
	if err != nil || !ok {
		return append(out, b...), err
	}
	recs, err := parseRecords(raw, h.RecordCount, p.recs)
	p.recs = recs
	if err != nil {
		return out, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
	}
	hasHorizon := h.Attributes&attributeDeleteHorizon != 0
	needHorizon := false
	kept := p.kept[:0]
	for i := range recs {
		r := &recs[i]
		offset := h.BaseOffset + int64(r.offsetDelta)
		if r.key == nil {
			p.Result.RecordsRemoved++ // Kafka's cleaner drops keyless records
			continue
		}
		if latest, found := p.offsets.get(r.key); found && offset < latest {
			p.Result.RecordsRemoved++
			continue
		}
		if r.tombstone {
			if hasHorizon && p.nowMs >= h.BaseTimestamp {
				p.Result.RecordsRemoved++
				p.Result.TombstonesRemoved++
				continue
			}
			needHorizon = needHorizon || !hasHorizon
		}
		kept = append(kept, i)
	}
	p.kept = kept
	if len(kept) == len(recs) && !needHorizon {
		return append(out, b...), nil
	}
	if len(kept) == 0 {
		return p.emptyOrNothing(out, h), nil
	}
	return p.rebuildBatch(out, h, recs, kept, needHorizon)
}

// filterControlBatch applies filterBatch's rule for transaction markers.
func (p *CleanPlan) filterControlBatch(out, b []byte, h BatchHeader, walker *txnWalker) ([]byte, error) {
	discardable := walker.controlBatch(h, h.ControlType)
	if h.BaseOffset >= p.endOffset {
		return append(out, b...), nil
	}
	hasHorizon := h.Attributes&attributeDeleteHorizon != 0
	if discardable && (h.RecordCount == 0 || hasHorizon && p.nowMs >= h.BaseTimestamp) {
		if h.RecordCount > 0 && h.ControlType == controlTypeAbort {
			p.droppedMarkers[h.LastOffset()] = true
		}
		return p.emptyOrNothing(out, h), nil
	}
	if !discardable || hasHorizon || h.Codec() != 0 {
		return append(out, b...), nil
	}
	// The marker's transaction has no batch left: it gets its delete horizon.
	recs, err := parseRecords(b[BatchHeaderSize:], h.RecordCount, p.recs)
	p.recs = recs
	if err != nil {
		return out, fmt.Errorf("control batch at offset %d: %w", h.BaseOffset, err)
	}
	kept := p.kept[:0]
	for i := range recs {
		kept = append(kept, i)
	}
	p.kept = kept
	return p.rebuildBatch(out, h, recs, kept, true)
}

// emptyOrNothing is the end of a batch that keeps no record: an empty batch when it
// holds its producer's last sequence and epoch, else nothing.
func (p *CleanPlan) emptyOrNothing(out []byte, h BatchHeader) []byte {
	if p.lastOfProducer(h) {
		return appendEmptyBatch(out, h)
	}
	return out
}

// rebuildBatch writes a batch with h's offsets, producer fields and codec holding the
// records kept. With needHorizon the batch gets its delete horizon (now +
// delete.retention.ms) as baseTimestamp and the records' timestamp deltas are rebased.
func (p *CleanPlan) rebuildBatch(out []byte, h BatchHeader, recs []record, kept []int, needHorizon bool) ([]byte, error) {
	base := h.BaseTimestamp
	attrs := h.Attributes
	if needHorizon {
		base = p.nowMs + p.opts.DeleteRetentionMs
		attrs |= attributeDeleteHorizon
	}
	maxTs := int64(-1)
	section := p.section[:0]
	for _, i := range kept {
		r := &recs[i]
		ts := h.BaseTimestamp + r.tsDelta
		maxTs = max(maxTs, ts)
		if base == h.BaseTimestamp {
			section = append(section, r.raw...)
			continue
		}
		var tmp [3 * binary.MaxVarintLen64]byte
		n := binary.PutVarint(tmp[:], ts-base)
		n += binary.PutVarint(tmp[n:], int64(r.offsetDelta))
		section = binary.AppendVarint(section, int64(1+n+len(r.rest)))
		section = append(section, r.attrs)
		section = append(section, tmp[:n]...)
		section = append(section, r.rest...)
	}
	p.section = section
	if h.LogAppendTime() {
		maxTs = h.MaxTimestamp
	}
	body := section
	if h.Codec() != 0 {
		var err error
		if body, err = p.opts.Compress(h.Codec(), section); err != nil {
			return out, fmt.Errorf("recompressing batch at offset %d: %w", h.BaseOffset, err)
		}
	}
	start := len(out)
	out = appendBatchHeader(out, h, attrs, base, maxTs, int32(len(kept)), len(body))
	out = append(out, body...)
	sealBatch(out[start:])
	return out, nil
}

// appendEmptyBatch appends a header-only batch with h's offsets and producer fields and
// no records (Kafka's DefaultRecordBatch.writeEmptyHeader): uncompressed, no delete
// horizon, both timestamps h's max timestamp.
func appendEmptyBatch(out []byte, h BatchHeader) []byte {
	start := len(out)
	attrs := h.Attributes &^ (attributeCodecMask | attributeDeleteHorizon)
	out = appendBatchHeader(out, h, attrs, h.MaxTimestamp, h.MaxTimestamp, 0, 0)
	sealBatch(out[start:])
	return out
}

// appendBatchHeader appends a v2 header for a batch of bodyLen record bytes; the CRC is
// filled in by sealBatch.
func appendBatchHeader(out []byte, h BatchHeader, attrs int16, baseTs, maxTs int64, count int32, bodyLen int) []byte {
	var hb [BatchHeaderSize]byte
	binary.BigEndian.PutUint64(hb[offsetBaseOffset:], uint64(h.BaseOffset))
	binary.BigEndian.PutUint32(hb[offsetBatchLength:], uint32(minBatchLength+bodyLen))
	binary.BigEndian.PutUint32(hb[offsetPartitionLeaderEpoch:], uint32(h.PartitionLeaderEpoch))
	hb[offsetMagic] = MagicV2
	binary.BigEndian.PutUint16(hb[offsetAttributes:], uint16(attrs))
	binary.BigEndian.PutUint32(hb[offsetLastOffsetDelta:], uint32(h.LastOffsetDelta))
	binary.BigEndian.PutUint64(hb[offsetBaseTimestamp:], uint64(baseTs))
	binary.BigEndian.PutUint64(hb[offsetMaxTimestamp:], uint64(maxTs))
	binary.BigEndian.PutUint64(hb[offsetProducerID:], uint64(h.ProducerID))
	binary.BigEndian.PutUint16(hb[offsetProducerEpoch:], uint16(h.ProducerEpoch))
	binary.BigEndian.PutUint32(hb[offsetBaseSequence:], uint32(h.BaseSequence))
	binary.BigEndian.PutUint32(hb[offsetRecordCount:], uint32(count))
	return append(out, hb[:]...)
}

// sealBatch computes the CRC-32C of a whole batch in place.
func sealBatch(b []byte) {
	binary.BigEndian.PutUint32(b[offsetCRC:], crc32.Checksum(b[offsetAttributes:], castagnoli))
}
