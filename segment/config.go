package segment

import (
	"math"
	"time"
)

// Config holds a log's topic-level settings, named as Kafka names them. The zero value is
// not usable; start from DefaultConfig.
type Config struct {
	// SegmentBytes is segment.bytes: roll when the active segment would grow past it.
	SegmentBytes int64
	// SegmentMs is segment.ms: roll when the active segment's first batch is this much
	// older than the batches being appended.
	SegmentMs int64
	// SegmentIndexBytes is segment.index.bytes: the largest size of each index file
	// (Kafka preallocates it; Petrel's files grow with their entries); a full index rolls
	// the segment.
	SegmentIndexBytes int
	// IndexIntervalBytes is index.interval.bytes: bytes appended between index entries.
	IndexIntervalBytes int
	// RetentionMs is retention.ms; -1 keeps segments forever.
	RetentionMs int64
	// RetentionBytes is retention.bytes; -1 means no size limit.
	RetentionBytes int64
	// RemoteStorageEnable is remote.storage.enable (KIP-405): closed segments are copied
	// to remote storage, a local segment is deleted only once wholly copied
	// (SetRemoteLogState), local retention is LocalRetentionMs and LocalRetentionBytes,
	// and the log start offset may lie below the local segments (tiered.go).
	RemoteStorageEnable bool
	// RemoteCopyDisable is remote.log.copy.disable (KIP-950): with remote storage, no
	// more segments are copied, and local retention falls back to RetentionMs and
	// RetentionBytes without waiting for copies (Kafka's
	// remoteLogEnabledAndRemoteCopyEnabled).
	RemoteCopyDisable bool
	// LocalRetentionMs is local.retention.ms: with remote storage, how long a copied
	// segment stays on local disk; -2 means RetentionMs, -1 forever.
	LocalRetentionMs int64
	// LocalRetentionBytes is local.retention.bytes: with remote storage, the size the
	// local log may grow to before copied segments are deleted; -2 means RetentionBytes,
	// -1 no limit.
	LocalRetentionBytes int64
	// FlushMessages is flush.messages: fsync after this many unflushed records.
	// Kafka's default (math.MaxInt64) leaves flushing to the operating system.
	FlushMessages int64
	// FlushMs is flush.ms: fsync when the last flush is this old at an append.
	// Kafka's default (math.MaxInt64) disables it.
	FlushMs int64
	// Compacted is set when cleanup.policy includes compact. A compacted log's offsets
	// have gaps (cleaned-away batches) and its batches may hold fewer records than their
	// offset span, down to none; recovery and follower appends accept both, while an
	// uncompacted log treats a gap as corruption.
	Compacted bool
	// LogAppendTime is message.timestamp.type=LogAppendTime: a leader append stamps each
	// batch with the append time (the timestamp-type attribute bit and maxTimestamp, the
	// CRC recomputed; records untouched), as Kafka's LogValidator does. Follower appends
	// keep the leader's batches as they are.
	LogAppendTime bool
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:        1 << 30,
		SegmentMs:           7 * 24 * int64(time.Hour/time.Millisecond),
		SegmentIndexBytes:   10 << 20,
		IndexIntervalBytes:  4096,
		RetentionMs:         7 * 24 * int64(time.Hour/time.Millisecond),
		RetentionBytes:      -1,
		LocalRetentionMs:    -2,
		LocalRetentionBytes: -2,
		FlushMessages:       math.MaxInt64,
		FlushMs:             math.MaxInt64,
	}
}

// maxIndexEntries is the number of entries an index of entrySize bytes holds.
func (c Config) maxIndexEntries(entrySize int) int {
	n := c.SegmentIndexBytes / entrySize
	if n < 2 {
		n = 2
	}
	return n
}
