package broker

import (
	"errors"
	"fmt"
	"github.com/petrel-broker/petrel/compress"
	"io"
	"sync"
	"sync/atomic"

	"github.com/petrel-broker/petrel/segment"
)

// decompressedLimitProperty bounds how far one produced batch may decompress while its
// records are validated (see docs/configuration.md).
const decompressedLimitProperty = "petrel.max.decompressed.batch.bytes"

// recordScratchSize is the pooled buffer a compressed batch's records are decompressed
// into, a piece at a time.
const recordScratchSize = 64 << 10

// skipRecordValidation turns the record walk off. Only the validation-cost benchmark
// sets it, to compare against the produce path without it in the same run.
var skipRecordValidation atomic.Bool

// recordValidator walks every record of every produced batch on the leader, as Kafka's
// log validator does, decompressing compressed batches as a stream with pooled readers
// and buffers, never past the limit.
type recordValidator struct {
	limit   int64
	codecs  *compress.Readers
	scratch sync.Pool // *[]byte of recordScratchSize
	rewrite batchRecompressor
}

func newRecordValidator(limit int64) *recordValidator {
	if limit < 1 {
		limit = 64 << 20
	}
	v := &recordValidator{limit: limit, codecs: compress.NewReaders(limit)}
	v.scratch.New = func() any { b := make([]byte, recordScratchSize); return &b }
	return v
}

// compressWhole compresses a cleaned batch's records with its codec at Kafka's default
// levels (the cleaner keeps each batch's codec).
func (v *recordValidator) compressWhole(codec int8, raw []byte) ([]byte, error) {
	return v.rewrite.writers.Compress(codec, compress.DefaultOptions, raw)
}

// check validates the records of batch, which validateProducedBatch accepted. Its
// errors wrap segment's sentinels, which errors.go maps to INVALID_RECORD (a bad
// record), CORRUPT_MESSAGE (undecodable compressed data) and MESSAGE_TOO_LARGE (past
// the decompression limit: Kafka's producers split such a batch and retry).
//
// With compacted set (cleanup.policy includes compact) a record without a key is
// INVALID_RECORD, as in Kafka's LogValidator: the cleaner could never keep it.
func (v *recordValidator) check(batch []byte, compacted bool) error {
	if skipRecordValidation.Load() {
		return nil
	}
	h, err := segment.ParseBatchHeader(batch)
	if err != nil {
		return err
	}
	if h.Codec() == 0 {
		sum, err := segment.CheckRecords(batch, nil, v.limit, nil)
		return recordsError(sum, err, compacted)
	}
	return v.walk(batch, h.Codec(), compacted, nil)
}

// walk checks the records of the compressed batch as check does, decompressing them as
// a stream; with tee set, every decompressed byte the walk reads is written to tee too
// (recompress.go), and an error tee returns ends the walk.
func (v *recordValidator) walk(batch []byte, codec int8, compacted bool, tee io.Writer) error {
	r, release, err := v.codecs.Open(codec, batch[segment.BatchHeaderSize:])
	if err != nil {
		if errors.Is(err, segment.ErrRecordsTooLarge) {
			return err
		}
		return fmt.Errorf("%w: %v", segment.ErrUndecodableRecords, err)
	}
	defer release()
	if tee != nil {
		r = io.TeeReader(r, tee)
	}
	buf := v.scratch.Get().(*[]byte)
	defer v.scratch.Put(buf)
	sum, err := segment.CheckRecords(batch, r, v.limit, *buf)
	return recordsError(sum, err, compacted)
}

// recordsError is check's error for what CheckRecords returned: with compacted set
// (cleanup.policy includes compact) a record without a key is INVALID_RECORD, as in
// Kafka's LogValidator: the cleaner could never keep it.
func recordsError(sum segment.RecordsSummary, err error, compacted bool) error {
	if err == nil && compacted && sum.NullKeys > 0 {
		return &recordErrors{indexes: sum.NullKeyIndexes, total: int(sum.NullKeys), message: "Compacted topic cannot accept message without key"}
	}
	return err
}

// recordErrors is INVALID_RECORD naming the records at fault (KIP-467, Produce v8+): the
// producer fails those and delivers the others of the batch.
type recordErrors struct {
	indexes []int32 // the records' indexes in the batch (the first ones, when many)
	total   int     // how many records are at fault
	message string  // each record's error
}

func (e *recordErrors) Error() string {
	return fmt.Sprintf("One or more records have been rejected due to %d record errors in total: %s (records %v)", e.total, e.message, e.indexes[:min(len(e.indexes), 3)])
}

func (e *recordErrors) Unwrap() error { return segment.ErrInvalidRecord }

// RecordBatchCRC is the CRC-32C a record batch (magic 2) carries over its bytes from the
// attributes field to its end: segment's one table, for the integration tests that
// check the batches a cluster serves.
func RecordBatchCRC(fromAttributes []byte) uint32 { return segment.CRC32C(fromAttributes) }
