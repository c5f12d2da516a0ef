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

// Idempotent producer errors (the partition's producer state refuses a batch).
var (
	// ErrInvalidProducerEpoch is a batch from an epoch older than the producer's latest
	// (Kafka's INVALID_PRODUCER_EPOCH).
	ErrInvalidProducerEpoch = errors.New("replication: producer epoch is older than the partition's")
	// ErrOutOfOrderSequence is a batch whose first sequence does not follow the
	// producer's last one (Kafka's OUT_OF_ORDER_SEQUENCE_NUMBER).
	ErrOutOfOrderSequence = errors.New("replication: out of order sequence number")
	// ErrInvalidTxnState is a transactional batch of a producer with no ongoing
	// transaction in the partition that the transaction coordinator verified (KIP-890;
	// Kafka's INVALID_TXN_STATE).
	ErrInvalidTxnState = errors.New("replication: transactional batch outside a verified transaction")
	// ErrTransactionCoordinatorFenced is a transaction marker whose coordinator epoch is
	// older than the one of the producer's last marker in the partition (Kafka's
	// TRANSACTION_COORDINATOR_FENCED).
	ErrTransactionCoordinatorFenced = errors.New("replication: transaction marker from a fenced coordinator")
	// ErrCorruptProducerSnapshot is a producer state snapshot that cannot be decoded; it
	// is ignored and the state rebuilt from the log.
	ErrCorruptProducerSnapshot = errors.New("replication: corrupt producer state snapshot")
)
