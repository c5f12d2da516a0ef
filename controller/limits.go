package controller

import (
	"errors"
	"fmt"
)

// Bounds on what one admin request may make the controller do, so that no request can
// stall metadata for everyone (Kafka's KRaft controller has the same idea). A request
// past a bound is refused with POLICY_VIOLATION before anything is planned.
const (
	// MaxPartitionsPerRequest bounds the partitions one CreateTopics request may create,
	// summed over its topics: Kafka's MAX_PARTITIONS_PER_BATCH (10,000), checked before
	// any replica is placed ("Excessively large number of partitions per request").
	MaxPartitionsPerRequest = 10_000
	// MaxRecordsPerUserOp bounds the metadata records one user operation writes, which
	// is one Raft entry applied at once: Kafka's MAX_RECORDS_PER_USER_OP (10,000). A
	// topic takes one record, one per partition and one per config override, so with
	// its bounds a single topic has at most 9,999 partitions, as in Kafka.
	MaxRecordsPerUserOp = 10_000
	// MaxResourcesPerRequest bounds the topics named in one CreateTopics or DeleteTopics
	// request. Kafka has no such bound; Petrel commits each topic on its own, so a
	// request's work grows with its topics, and each topic takes at least one record:
	// the same 10,000.
	MaxResourcesPerRequest = 10_000
	// MaxRemoteLogChangesPerRequest bounds the remote segment changes of one
	// RemoteLogSegments request (one Raft entry): a broker sends a deleted topic's
	// deletions in requests of at most this many.
	MaxRemoteLogChangesPerRequest = 500
	// MaxRemoteCustomMetadataBytes bounds a remote segment's custom metadata: Kafka's
	// remote.log.metadata.custom.metadata.max.bytes default (128).
	MaxRemoteCustomMetadataBytes = 128
	// MaxRemoteSegmentLeaderEpochs bounds the leader epochs of one remote segment, which
	// every node keeps (Kafka has no bound; a segment spanning more leaderships is not
	// copied, and its local retention waits).
	MaxRemoteSegmentLeaderEpochs = 1000
)

// ErrPolicyViolation means a request goes past one of the bounds above. Its text is
// the one clients have always been answered ("broker: ...").
var ErrPolicyViolation = errors.New("broker: policy violation")

// CheckRecordsPerUserOp refuses an operation that would write more than
// MaxRecordsPerUserOp records.
func CheckRecordsPerUserOp(n int) error {
	if n > MaxRecordsPerUserOp {
		return fmt.Errorf("%w: unable to perform excessively large batch operation: %d metadata records, the limit is %d", ErrPolicyViolation, n, MaxRecordsPerUserOp)
	}
	return nil
}

// TooManyResources is the refusal of a request naming more than MaxResourcesPerRequest
// resources.
func TooManyResources(n int) error {
	return fmt.Errorf("%w: the request names %d resources, the limit is %d", ErrPolicyViolation, n, MaxResourcesPerRequest)
}

// TooManyPartitions is the refusal of a request creating more than
// MaxPartitionsPerRequest partitions.
func TooManyPartitions(n int64) error {
	return fmt.Errorf("%w: excessively large number of partitions per request: %d, the limit is %d", ErrPolicyViolation, n, MaxPartitionsPerRequest)
}
