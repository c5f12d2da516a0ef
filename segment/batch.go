package segment

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Record batch v2 layout (see doc.go).
const (
	// BatchHeaderSize is the size of a v2 batch header, up to the records.
	BatchHeaderSize = 61
	// batchLengthOverhead is the bytes before and including batchLength.
	batchLengthOverhead = 12
	// minBatchLength is batchLength of a batch with no record bytes.
	minBatchLength = BatchHeaderSize - batchLengthOverhead

	offsetBaseOffset           = 0
	offsetBatchLength          = 8
	offsetPartitionLeaderEpoch = 12
	offsetMagic                = 16
	offsetCRC                  = 17
	offsetAttributes           = 21
	offsetLastOffsetDelta      = 23
	offsetBaseTimestamp        = 27
	offsetMaxTimestamp         = 35
	offsetProducerID           = 43
	offsetProducerEpoch        = 51
	offsetBaseSequence         = 53
	offsetRecordCount          = 57

	// MagicV2 is the only message format this package stores.
	MagicV2 = 2

	attributeCodecMask     = 0x07
	attributeLogAppendTime = 0x08
	attributeTransactional = 0x10
	attributeControl       = 0x20
	maxCodec               = 4 // zstd
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BatchHeader is the decoded 61-byte header of a v2 record batch.
type BatchHeader struct {
	BaseOffset           int64
	BatchLength          int32
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	RecordCount          int32
	// ControlType is the type of a control batch's record (0 ABORT, 1 COMMIT) when the
	// bytes after the header were at hand (ParseBatchHeader of a whole batch,
	// ScanBatchHeaders), else -1; -1 for data batches.
	ControlType int16
	// ControlCoordinatorEpoch is a transaction marker's coordinator epoch (its value is
	// version int16, coordinatorEpoch int32) under the same condition, else -1.
	ControlCoordinatorEpoch int32
}

// Size is the whole batch's size in bytes, header included.
func (h BatchHeader) Size() int64 { return int64(h.BatchLength) + batchLengthOverhead }

// LastOffset is the offset of the batch's last record.
func (h BatchHeader) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset after the batch's last record.
func (h BatchHeader) NextOffset() int64 { return h.LastOffset() + 1 }

// Codec is the compression codec: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.
func (h BatchHeader) Codec() int8 { return int8(h.Attributes & attributeCodecMask) }

// LogAppendTime reports whether the batch's timestamps are the broker's append time.
func (h BatchHeader) LogAppendTime() bool { return h.Attributes&attributeLogAppendTime != 0 }

// Transactional reports whether the batch belongs to a transaction.
func (h BatchHeader) Transactional() bool { return h.Attributes&attributeTransactional != 0 }

// Control reports whether the batch is a control batch (a transaction marker).
func (h BatchHeader) Control() bool { return h.Attributes&attributeControl != 0 }

// ParseBatchHeader decodes the header at the start of b. It checks the magic byte and that
// batchLength is at least a header's worth, but neither the CRC nor that b holds the whole
// batch.
func ParseBatchHeader(b []byte) (BatchHeader, error) {
	if len(b) > offsetMagic && int8(b[offsetMagic]) != MagicV2 {
		return BatchHeader{}, fmt.Errorf("%w: magic %d", ErrUnsupportedMagic, int8(b[offsetMagic]))
	}
	if len(b) < BatchHeaderSize {
		return BatchHeader{}, fmt.Errorf("%w: %d bytes, a batch header needs %d", ErrInvalidBatch, len(b), BatchHeaderSize)
	}
	h := BatchHeader{
		BaseOffset:           int64(binary.BigEndian.Uint64(b[offsetBaseOffset:])),
		BatchLength:          int32(binary.BigEndian.Uint32(b[offsetBatchLength:])),
		PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(b[offsetPartitionLeaderEpoch:])),
		Magic:                int8(b[offsetMagic]),
		CRC:                  binary.BigEndian.Uint32(b[offsetCRC:]),
		Attributes:           int16(binary.BigEndian.Uint16(b[offsetAttributes:])),
		LastOffsetDelta:      int32(binary.BigEndian.Uint32(b[offsetLastOffsetDelta:])),
		BaseTimestamp:        int64(binary.BigEndian.Uint64(b[offsetBaseTimestamp:])),
		MaxTimestamp:         int64(binary.BigEndian.Uint64(b[offsetMaxTimestamp:])),
		ProducerID:           int64(binary.BigEndian.Uint64(b[offsetProducerID:])),
		ProducerEpoch:        int16(binary.BigEndian.Uint16(b[offsetProducerEpoch:])),
		BaseSequence:         int32(binary.BigEndian.Uint32(b[offsetBaseSequence:])),
		RecordCount:          int32(binary.BigEndian.Uint32(b[offsetRecordCount:])),
	}
	if h.BatchLength < minBatchLength {
		return BatchHeader{}, fmt.Errorf("%w: batchLength %d is below the header's %d", ErrInvalidBatch, h.BatchLength, minBatchLength)
	}
	if h.BaseOffset < 0 {
		return BatchHeader{}, fmt.Errorf("%w: negative baseOffset %d", ErrInvalidBatch, h.BaseOffset)
	}
	h.ControlType, h.ControlCoordinatorEpoch = -1, -1
	if h.Control() {
		rec := b[BatchHeaderSize:min(len(b), int(h.Size()))]
		h.ControlType, h.ControlCoordinatorEpoch = controlRecord(rec)
	}
	return h, nil
}

// controlRecordPrefix is enough bytes of a control batch's first record to read its
// type: the record's length, attributes, timestamp and offset deltas and key length
// (varints) and the key's version and type (int16 each).
const controlRecordPrefix = 32

// controlRecord reads a control batch's first record from the bytes after the batch
// header, in one pass: its type from the key (version int16, type int16) and, for a
// transaction marker, the coordinator epoch from the value (version int16,
// coordinatorEpoch int32). Each is -1 when the record is cut short or malformed before
// it.
func controlRecord(rec []byte) (typ int16, coordinatorEpoch int32) {
	typ, coordinatorEpoch = -1, -1
	_, n := binary.Varint(rec) // record length
	if n <= 0 || len(rec) < n+1 {
		return
	}
	rec = rec[n+1:] // attributes int8
	for range 2 {   // timestampDelta, offsetDelta
		if _, n = binary.Varint(rec); n <= 0 {
			return
		}
		rec = rec[n:]
	}
	keyLen, n := binary.Varint(rec)
	if n > 0 && keyLen >= 4 && len(rec) >= n+4 {
		typ = int16(binary.BigEndian.Uint16(rec[n+2:]))
	}
	if n <= 0 || keyLen < 0 || int64(len(rec)-n) < keyLen {
		return
	}
	rec = rec[n+int(keyLen):]
	valueLen, n := binary.Varint(rec)
	if n <= 0 || valueLen < 6 || len(rec) < n+6 {
		return
	}
	coordinatorEpoch = int32(binary.BigEndian.Uint32(rec[n+2:]))
	return
}

// ValidateBatch checks that b is exactly one whole v2 batch: magic, a batchLength that
// matches len(b), a record count of at least one that agrees with lastOffsetDelta, a
// known codec, and the CRC-32C over attributes..end.
func ValidateBatch(b []byte) (BatchHeader, error) {
	return validateBatch(b, false)
}

// ValidateStoredBatch is ValidateBatch for batches already in a log, which compaction
// may have thinned: the record count may be anything from 0 (an empty batch kept for its
// producer state) to lastOffsetDelta+1, since offsets never change.
func ValidateStoredBatch(b []byte) (BatchHeader, error) {
	return validateBatch(b, true)
}

func validateBatch(b []byte, stored bool) (BatchHeader, error) {
	h, err := ParseBatchHeader(b)
	if err != nil {
		return h, err
	}
	if h.Size() != int64(len(b)) {
		return h, fmt.Errorf("%w: batchLength %d does not match the %d bytes given", ErrInvalidBatch, h.BatchLength, len(b))
	}
	if stored {
		err = checkStoredHeaderFields(h)
	} else {
		err = checkHeaderFields(h)
	}
	if err != nil {
		return h, err
	}
	if crc := crc32.Checksum(b[offsetAttributes:], castagnoli); crc != h.CRC {
		return h, fmt.Errorf("%w: stored %#08x, computed %#08x", ErrCorruptBatch, h.CRC, crc)
	}
	return h, nil
}

// checkHeaderFields checks the header fields that do not need the batch's body.
func checkHeaderFields(h BatchHeader) error {
	if h.RecordCount < 1 || h.LastOffsetDelta != h.RecordCount-1 {
		return fmt.Errorf("%w: recordCount %d with lastOffsetDelta %d", ErrInvalidBatch, h.RecordCount, h.LastOffsetDelta)
	}
	if h.Codec() > maxCodec {
		return fmt.Errorf("%w: unknown compression codec %d", ErrInvalidBatch, h.Codec())
	}
	return nil
}

// checkStoredHeaderFields is checkHeaderFields for a possibly compacted batch.
func checkStoredHeaderFields(h BatchHeader) error {
	if h.LastOffsetDelta < 0 || h.RecordCount < 0 || int64(h.RecordCount) > int64(h.LastOffsetDelta)+1 {
		return fmt.Errorf("%w: recordCount %d with lastOffsetDelta %d", ErrInvalidBatch, h.RecordCount, h.LastOffsetDelta)
	}
	if h.Codec() > maxCodec {
		return fmt.Errorf("%w: unknown compression codec %d", ErrInvalidBatch, h.Codec())
	}
	return nil
}

// batchSet summarises a validated buffer of batches.
type batchSet struct {
	count        int   // batches
	records      int64 // records
	offsetSpan   int64 // sum of (lastOffsetDelta+1): offsets the set occupies
	maxTimestamp int64 // largest batch maxTimestamp, -1 if none is set
	firstBase    int64 // baseOffset of the first batch as given
	lastOffset   int64 // last offset of the last batch as given
}

// validateBatches checks that buf is one or more whole, valid v2 batches back to back.
// With follower set (follower appends keep the leader's offsets) each batch must start
// right after the previous one or, with compacted set, anywhere after it: compaction
// leaves gaps between batches, never overlaps, and thins batches (ValidateStoredBatch).
//
// With crcChecked set the caller has already run ValidateBatch on every batch of buf
// (the produce handler does, to answer CORRUPT_MESSAGE): the structure is still checked
// here, the CRC-32C pass is not repeated.
func validateBatches(buf []byte, follower, compacted, crcChecked bool) (batchSet, error) {
	stored := follower && compacted
	s := batchSet{maxTimestamp: -1}
	if len(buf) == 0 {
		return s, fmt.Errorf("%w: no batches", ErrInvalidBatch)
	}
	for pos := 0; pos < len(buf); {
		rest := buf[pos:]
		h, err := ParseBatchHeader(rest)
		if err != nil {
			return s, fmt.Errorf("batch at byte %d: %w", pos, err)
		}
		if h.Size() > int64(len(rest)) {
			return s, fmt.Errorf("batch at byte %d: %w: batchLength %d runs past the %d bytes left", pos, ErrInvalidBatch, h.BatchLength, len(rest))
		}
		if crcChecked {
			err = checkHeaderFields(h)
		} else {
			_, err = validateBatch(rest[:h.Size()], stored)
		}
		if err != nil {
			return s, fmt.Errorf("batch at byte %d: %w", pos, err)
		}
		if s.count == 0 {
			s.firstBase = h.BaseOffset
		} else if follower && (h.BaseOffset <= s.lastOffset || !compacted && h.BaseOffset != s.lastOffset+1) {
			return s, fmt.Errorf("batch at byte %d: %w: baseOffset %d does not follow %d", pos, ErrInvalidBatch, h.BaseOffset, s.lastOffset)
		}
		s.lastOffset = h.LastOffset()
		s.count++
		s.records += int64(h.RecordCount)
		s.offsetSpan += int64(h.LastOffsetDelta) + 1
		s.maxTimestamp = max(s.maxTimestamp, h.MaxTimestamp)
		pos += int(h.Size())
	}
	// One append goes to one segment, whose offsets are 32-bit relative to its base.
	if s.offsetSpan > 1<<31 {
		return s, fmt.Errorf("%w: the batches span %d offsets, more than a segment holds", ErrInvalidBatch, s.offsetSpan)
	}
	return s, nil
}

// stampLogAppendTime marks the whole batch b LogAppendTime with appendTime (ms) as its
// maxTimestamp and recomputes its CRC (message.timestamp.type=LogAppendTime). The
// records and baseTimestamp are left as they are: a consumer takes maxTimestamp as every
// record's timestamp, as Kafka's LogValidator leaves them for v2 batches.
func stampLogAppendTime(b []byte, appendTime int64) {
	attrs := binary.BigEndian.Uint16(b[offsetAttributes:]) | attributeLogAppendTime
	binary.BigEndian.PutUint16(b[offsetAttributes:], attrs)
	binary.BigEndian.PutUint64(b[offsetMaxTimestamp:], uint64(appendTime))
	binary.BigEndian.PutUint32(b[offsetCRC:], crc32.Checksum(b[offsetAttributes:], castagnoli))
}

// stampBatch rewrites the two fields outside the CRC: baseOffset and partitionLeaderEpoch.
func stampBatch(b []byte, baseOffset int64, leaderEpoch int32) {
	binary.BigEndian.PutUint64(b[offsetBaseOffset:], uint64(baseOffset))
	binary.BigEndian.PutUint32(b[offsetPartitionLeaderEpoch:], uint32(leaderEpoch))
}
