package replication

import "errors"

// Sentinel errors of the data plane. The broker maps them to Kafka codes.
var (
	ErrNotLeader          = errors.New("replication: not the leader for this partition")
	ErrFencedLeaderEpoch  = errors.New("replication: leader epoch in the request is older than the partition's")
	ErrUnknownLeaderEpoch = errors.New("replication: leader epoch in the request is newer than the partition's")
	ErrNotEnoughReplicas  = errors.New("replication: fewer in-sync replicas than min.insync.replicas")
	ErrPartitionStopped   = errors.New("replication: partition stopped")
	ErrOffsetNotAvailable = errors.New("replication: offset not available yet")
	ErrOffsetOutOfRange   = errors.New("replication: offset out of range")
)
