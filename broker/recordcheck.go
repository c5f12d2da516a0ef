package broker

import (
	"strconv"
	"sync/atomic"

	"github.com/petrel-broker/petrel/compress"
	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/segment"
)

// decompressedLimitProperty bounds how far one produced batch may decompress while its
// records are validated (see docs/configuration.md).
const decompressedLimitProperty = "petrel.max.decompressed.batch.bytes"

// skipRecordValidation turns the record walk off. Only the validation-cost benchmark
// sets it, to compare against the produce path without it in the same run.
var skipRecordValidation atomic.Bool

// recordValidator is segment's record walk and recompression (segment/validate.go,
// segment/recompress.go) as the produce path uses it.
type recordValidator struct{ *segment.RecordValidator }

func newRecordValidator(limit int64) *recordValidator {
	return &recordValidator{segment.NewRecordValidator(limit)}
}

// check validates the records of batch, which validateProducedBatch accepted
// (segment.RecordValidator.Check; errors.go maps its errors to Kafka's codes).
func (v *recordValidator) check(batch []byte, compacted bool) error {
	if skipRecordValidation.Load() {
		return nil
	}
	return v.Check(batch, compacted)
}

// compressionConfig resolves a topic's compression.type and its levels.
func compressionConfig(cfgs map[string]config.Resolved) segment.Compression {
	codec, ok := segment.CompressionCodecs[cfgs["compression.type"].Value]
	if !ok {
		codec = segment.KeepCodec
	}
	opts := compress.DefaultOptions
	if n, err := strconv.Atoi(cfgs["compression.gzip.level"].Value); err == nil {
		opts.GzipLevel = n
	}
	if n, err := strconv.Atoi(cfgs["compression.zstd.level"].Value); err == nil {
		opts.ZstdLevel = n
	}
	return segment.Compression{Codec: codec, Opts: opts}
}

// RecordBatchCRC is the CRC-32C a record batch (magic 2) carries over its bytes from the
// attributes field to its end: segment's one table, for the integration tests that
// check the batches a cluster serves.
func RecordBatchCRC(fromAttributes []byte) uint32 { return segment.CRC32C(fromAttributes) }
