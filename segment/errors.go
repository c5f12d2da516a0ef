package segment

import (
	"errors"

	"github.com/petrel-broker/petrel/compress"
)

// Sentinel errors. Errors returned by this package wrap one of these with details
// (offsets, positions, file names); match them with errors.Is.
var (
	// ErrCorruptBatch means a batch's CRC-32C does not match its bytes.
	ErrCorruptBatch = errors.New("segment: corrupt record batch (CRC mismatch)")
	// ErrInvalidBatch means a batch is malformed: truncated, a length inconsistent with
	// its buffer, a bad record count, an unknown codec, or offsets out of order.
	ErrInvalidBatch = errors.New("segment: invalid record batch")
	// ErrInvalidRecord means a record inside a batch is malformed: a length, offset delta,
	// key, value or header inconsistent with the batch or with the bytes present.
	ErrInvalidRecord = errors.New("segment: invalid record")
	// ErrRecordsTooLarge means a compressed batch's records decompress to more than the
	// limit the caller set: compress's sentinel, so a decompressing reader's error and
	// the record walk's are one.
	ErrRecordsTooLarge = compress.ErrTooLarge
	// ErrRecordSetTooLarge means a leader append of more bytes than segment.bytes: no
	// segment could hold it (Kafka's RecordBatchTooLargeException).
	ErrRecordSetTooLarge = errors.New("segment: the records are larger than the segment size (segment.bytes)")
	// ErrUndecodableRecords means a compressed batch's records section cannot be
	// decompressed.
	ErrUndecodableRecords = errors.New("segment: compressed records cannot be decoded")
	// ErrUnsupportedMagic means a batch of message format v0 or v1 (or an unknown magic).
	ErrUnsupportedMagic = errors.New("segment: unsupported record batch magic")
	// ErrOffsetOutOfRange means an offset below the log start offset or above the log end
	// offset.
	ErrOffsetOutOfRange = errors.New("segment: offset out of range")
	// ErrClosed means the Log was closed.
	ErrClosed = errors.New("segment: log closed")
	// ErrLogFailed means an earlier write or sync failed; the log refuses writes until it
	// is reopened (the error is sticky).
	ErrLogFailed = errors.New("segment: log failed after a storage error")
	// ErrLogDamaged means a segment file is not the size the log's clean-shutdown
	// description names (OpenOptions.ShutdownState): it was cut short, extended or
	// replaced while the broker was stopped. The log is found out at the file's first
	// open, and refuses writes from then on (sticky, as ErrLogFailed, but the log
	// directory is sound): its owner reopens it from its files, whose recovery cuts what
	// is torn.
	ErrLogDamaged = errors.New("segment: log files changed since the clean shutdown")
	// ErrCorruptCheckpoint means a checkpoint file could not be parsed.
	ErrCorruptCheckpoint = errors.New("segment: corrupt checkpoint file")
	// ErrInvalidName means a file or directory name is not in Kafka's layout.
	ErrInvalidName = errors.New("segment: invalid name")
)
