package segment

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// File suffixes and names of Kafka's on-disk layout.
const (
	LogFileSuffix        = ".log"
	IndexFileSuffix      = ".index"
	TimeIndexFileSuffix  = ".timeindex"
	TxnIndexFileSuffix   = ".txnindex"
	DeletedFileSuffix    = ".deleted"
	CleanedFileSuffix    = ".cleaned"
	SwapFileSuffix       = ".swap"
	checkpointTempSuffix = ".tmp"

	// DeleteDirSuffix ends the name of a partition directory awaiting deletion:
	// "<topic>-<partition>.<uuid>-delete".
	DeleteDirSuffix = "-delete"

	// LeaderEpochCheckpointFile is the per-partition leader epoch cache.
	LeaderEpochCheckpointFile = "leader-epoch-checkpoint"
	// ReplicationOffsetCheckpointFile holds each partition's high watermark, per log dir.
	ReplicationOffsetCheckpointFile = "replication-offset-checkpoint"
	// RecoveryPointOffsetCheckpointFile holds each partition's flushed offset, per log dir.
	RecoveryPointOffsetCheckpointFile = "recovery-point-offset-checkpoint"
	// CleanerOffsetCheckpointFile holds each compacted partition's first dirty offset, per
	// log dir.
	CleanerOffsetCheckpointFile = "cleaner-offset-checkpoint"
	// LogStartOffsetCheckpointFile holds each partition's log start offset, per log dir.
	LogStartOffsetCheckpointFile = "log-start-offset-checkpoint"
)

// PartitionDirName returns Kafka's directory name for a partition: "<topic>-<partition>".
func PartitionDirName(topic string, partition int32) string {
	return topic + "-" + strconv.FormatInt(int64(partition), 10)
}

// ParsePartitionDirName splits "<topic>-<partition>" at its last '-' (topic names may
// contain '-').
func ParsePartitionDirName(name string) (topic string, partition int32, err error) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return "", 0, fmt.Errorf("%w: partition directory %q", ErrInvalidName, name)
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 || name[i+1] == '+' {
		return "", 0, fmt.Errorf("%w: partition directory %q", ErrInvalidName, name)
	}
	return name[:i], int32(p), nil
}

// segmentFileName is the base offset zero-padded to 20 digits plus suffix.
func segmentFileName(baseOffset int64, suffix string) string {
	return fmt.Sprintf("%020d%s", baseOffset, suffix)
}

func segmentPath(dir string, baseOffset int64, suffix string) string {
	return filepath.Join(dir, segmentFileName(baseOffset, suffix))
}

// parseSegmentFileName returns the base offset and suffix of a segment file name such as
// 00000000000000000042.log.
func parseSegmentFileName(name string) (baseOffset int64, suffix string, ok bool) {
	if len(name) < 21 || name[20] != '.' {
		return 0, "", false
	}
	base, err := strconv.ParseInt(name[:20], 10, 64)
	if err != nil || base < 0 {
		return 0, "", false
	}
	return base, name[20:], true
}
