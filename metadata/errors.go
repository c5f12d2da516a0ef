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
	// Remote log segment changes the image refuses (remote_log.go): from a broker at
	// another leader epoch than the partition's (FENCED_LEADER_EPOCH), from a broker
	// that is not its leader (NOT_LEADER_OR_FOLLOWER), or against Kafka's state
	// transitions (INVALID_REQUEST).
	ErrRemoteLogFenced            = errors.New("metadata: remote log segment change at a stale leader epoch")
	ErrRemoteLogNotLeader         = errors.New("metadata: remote log segment change from a non-leader")
	ErrInvalidRemoteLogTransition = errors.New("metadata: invalid remote log segment state transition")
)
