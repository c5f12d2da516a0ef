package metadata

import "errors"

// Domain errors. Apply returns them as results (never panics on them); the broker maps
// them to Kafka error codes in its one table.
var (
	ErrInvalidTopic             = errors.New("metadata: invalid topic name")
	ErrTopicExists              = errors.New("metadata: topic already exists")
	ErrUnknownTopic             = errors.New("metadata: unknown topic")
	ErrUnknownTopicID           = errors.New("metadata: unknown topic id")
	ErrUnknownPartition         = errors.New("metadata: unknown partition")
	ErrInvalidPartitions        = errors.New("metadata: invalid number of partitions")
	ErrInvalidReplicationFactor = errors.New("metadata: invalid replication factor")
	ErrInvalidReplicaAssignment = errors.New("metadata: invalid replica assignment")
	ErrInvalidConfig            = errors.New("metadata: invalid config")
	ErrUnknownBroker            = errors.New("metadata: unknown broker")
	ErrInvalidRecord            = errors.New("metadata: invalid record")
	// Leader elections that change nothing (Kafka's ElectLeaders partition errors).
	ErrElectionNotNeeded           = errors.New("metadata: election not needed")
	ErrPreferredLeaderNotAvailable = errors.New("metadata: preferred leader not available")
	ErrEligibleLeadersNotAvailable = errors.New("metadata: eligible leaders not available")
)
