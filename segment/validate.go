package segment

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/petrel-broker/petrel/compress"
)

// recordScratchSize is the pooled buffer a compressed batch's records are decompressed
// into, a piece at a time.
const recordScratchSize = 64 << 10

// RecordValidator walks every record of every produced batch on the leader, as Kafka's
// log validator does, decompressing compressed batches as a stream with pooled readers
// and buffers, never past the limit. It also rewrites batches to a topic's
// compression.type (recompress.go). Safe for concurrent use.
type RecordValidator struct {
	limit   int64
	codecs  *compress.Readers
	scratch sync.Pool // *[]byte of recordScratchSize
	rewrite batchRecompressor
}

// NewRecordValidator returns a validator that refuses a batch decompressing past limit
// bytes (petrel.max.decompressed.batch.bytes; 64 MiB when limit is not positive).
func NewRecordValidator(limit int64) *RecordValidator {
	if limit < 1 {
		limit = 64 << 20
	}
	v := &RecordValidator{limit: limit, codecs: compress.NewReaders(limit)}
	v.scratch.New = func() any { b := make([]byte, recordScratchSize); return &b }
	return v
}

// Decompress decompresses a whole records section with the validator's pooled readers,
// bounded by its limit: the Decompressor of time lookups and of the cleaner.
func (v *RecordValidator) Decompress(codec int8, compressed []byte) ([]byte, error) {
	return v.codecs.Decompress(codec, compressed)
}

// CompressWhole compresses a cleaned batch's records with its codec at Kafka's default
// levels (the cleaner keeps each batch's codec): the cleaner's Compressor.
func (v *RecordValidator) CompressWhole(codec int8, raw []byte) ([]byte, error) {
	return v.rewrite.writers.Compress(codec, compress.DefaultOptions, raw)
}

// Check validates the records of batch, which ValidateBatch accepted. Its errors wrap
// this package's sentinels, which the broker maps to INVALID_RECORD (a bad record,
// ErrInvalidRecord), CORRUPT_MESSAGE (undecodable compressed data,
// ErrUndecodableRecords) and MESSAGE_TOO_LARGE (past the decompression limit,
// ErrRecordsTooLarge: Kafka's producers split such a batch and retry).
//
// With compacted set (cleanup.policy includes compact) a record without a key is a
// *RecordErrors (INVALID_RECORD), as in Kafka's LogValidator: the cleaner could never
// keep it.
func (v *RecordValidator) Check(batch []byte, compacted bool) error {
	h, err := ParseBatchHeader(batch)
	if err != nil {
		return err
	}
	if h.Codec() == 0 {
		sum, err := CheckRecords(batch, nil, v.limit, nil)
		return recordsError(sum, err, compacted)
	}
	return v.walk(batch, h.Codec(), compacted, nil)
}

// walk checks the records of the compressed batch as Check does, decompressing them as
// a stream; with tee set, every decompressed byte the walk reads is written to tee too
// (recompress.go), and an error tee returns ends the walk.
func (v *RecordValidator) walk(batch []byte, codec int8, compacted bool, tee io.Writer) error {
	r, release, err := v.codecs.Open(codec, batch[BatchHeaderSize:])
	if err != nil {
		if errors.Is(err, ErrRecordsTooLarge) {
			return err
		}
		return fmt.Errorf("%w: %v", ErrUndecodableRecords, err)
	}
	defer release()
	if tee != nil {
		r = io.TeeReader(r, tee)
	}
	buf := v.scratch.Get().(*[]byte)
	defer v.scratch.Put(buf)
	sum, err := CheckRecords(batch, r, v.limit, *buf)
	return recordsError(sum, err, compacted)
}

// recordsError is Check's error for what CheckRecords returned: with compacted set
// (cleanup.policy includes compact) a record without a key is INVALID_RECORD, as in
// Kafka's LogValidator: the cleaner could never keep it.
func recordsError(sum RecordsSummary, err error, compacted bool) error {
	if err == nil && compacted && sum.NullKeys > 0 {
		return &RecordErrors{Indexes: sum.NullKeyIndexes, Total: int(sum.NullKeys), Message: "Compacted topic cannot accept message without key"}
	}
	return err
}

// RecordErrors is INVALID_RECORD naming the records at fault (KIP-467, Produce v8+): the
// producer fails those and delivers the others of the batch.
type RecordErrors struct {
	Indexes []int32 // the records' indexes in the batch (the first ones, when many)
	Total   int     // how many records are at fault
	Message string  // each record's error
}

func (e *RecordErrors) Error() string {
	return fmt.Sprintf("One or more records have been rejected due to %d record errors in total: %s (records %v)", e.Total, e.Message, e.Indexes[:min(len(e.Indexes), 3)])
}

// Unwrap makes a RecordErrors an ErrInvalidRecord.
func (e *RecordErrors) Unwrap() error { return ErrInvalidRecord }
