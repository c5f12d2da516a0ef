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

	// ErrISRChangeNotAttempted is what Options.AlterISR returns when the controller
	// certainly did not apply the change (Kafka's INELIGIBLE_REPLICA and
	// OPERATION_NOT_ATTEMPTED): the pending ISR is dropped at once (KIP-841).
	ErrISRChangeNotAttempted = errors.New("replication: the controller did not attempt the ISR change")
	// ErrISRChangeRejected is what Options.AlterISR returns when the controller refused
	// the change because the leader's view is stale (FENCED_LEADER_EPOCH,
	// INVALID_UPDATE_VERSION, UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST): the pending
	// ISR stays until newer metadata for the partition arrives. Any other error may
	// hide an applied change (a lost answer) and the request is retried.
	ErrISRChangeRejected = errors.New("replication: the controller rejected the ISR change")
)
