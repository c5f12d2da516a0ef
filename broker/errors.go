package broker

import (
	"context"
	"errors"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/controller"
	"github.com/petrel-broker/petrel/coordinator"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/segment"
	"github.com/petrel-broker/petrel/tiered"
	"github.com/twmb/franz-go/pkg/kerr"
)

// errorTable is the one mapping from domain errors to Kafka error codes. Handlers use
// kerr codes directly only for request-validation failures they detect themselves.
var errorTable = []struct {
	err  error
	code int16
}{
	// First: it wraps the read error under it (an offset out of range, a corrupt batch),
	// and a replica that cannot read its own committed batches answers CORRUPT_MESSAGE.
	{replication.ErrDigestCorrupt, kerr.CorruptMessage.Code},
	{segment.ErrOffsetOutOfRange, kerr.OffsetOutOfRange.Code},
	{segment.ErrCorruptBatch, kerr.CorruptMessage.Code},
	{segment.ErrInvalidBatch, kerr.InvalidRecord.Code},
	{segment.ErrInvalidRecord, kerr.InvalidRecord.Code},
	{segment.ErrUndecodableRecords, kerr.CorruptMessage.Code},
	{segment.ErrRecordSetTooLarge, kerr.RecordListTooLarge.Code},
	{segment.ErrRecordsTooLarge, kerr.MessageTooLarge.Code},
	{segment.ErrUnsupportedMagic, kerr.InvalidRecord.Code},
	{segment.ErrLogFailed, kerr.KafkaStorageError.Code},
	{segment.ErrLogDamaged, kerr.KafkaStorageError.Code},
	{segment.ErrClosed, kerr.NotLeaderForPartition.Code},
	{segment.ErrCorruptCheckpoint, kerr.KafkaStorageError.Code},
	{segment.ErrInvalidName, kerr.InvalidTopicException.Code},
	{metadata.ErrInvalidTopic, kerr.InvalidTopicException.Code},
	{metadata.ErrTopicExists, kerr.TopicAlreadyExists.Code},
	{metadata.ErrUnknownTopic, kerr.UnknownTopicOrPartition.Code},
	{metadata.ErrUnknownPartition, kerr.UnknownTopicOrPartition.Code},
	{metadata.ErrUnknownTopicID, kerr.UnknownTopicID.Code},
	{metadata.ErrInvalidPartitions, kerr.InvalidPartitions.Code},
	{metadata.ErrInvalidReplicationFactor, kerr.InvalidReplicationFactor.Code},
	{metadata.ErrInvalidReplicaAssignment, kerr.InvalidReplicaAssignment.Code},
	{metadata.ErrInvalidConfig, kerr.InvalidConfig.Code},
	{metadata.ErrUnknownBroker, kerr.BrokerIDNotRegistered.Code},
	{metadata.ErrNoReassignmentInProgress, kerr.NoReassignmentInProgress.Code},
	{metadata.ErrInvalidRecord, kerr.InvalidRequest.Code},
	{metadata.ErrElectionNotNeeded, kerr.ElectionNotNeeded.Code},
	{metadata.ErrPreferredLeaderNotAvailable, kerr.PreferredLeaderNotAvailable.Code},
	{metadata.ErrEligibleLeadersNotAvailable, kerr.EligibleLeadersNotAvailable.Code},
	{metadata.ErrUnknownScramCredential, kerr.ResourceNotFound.Code},
	{auth.ErrAuthenticationFailed, kerr.SaslAuthenticationFailed.Code},
	{auth.ErrMalformedMessage, kerr.SaslAuthenticationFailed.Code},
	{auth.ErrUnsupportedMechanism, kerr.UnsupportedSaslMechanism.Code},
	{auth.ErrInvalidCredential, kerr.UnacceptableCredential.Code},
	{auth.ErrInvalidJAAS, kerr.InvalidConfig.Code},
	{auth.ErrInvalidTLSConfig, kerr.InvalidConfig.Code},
	{replication.ErrNotLeader, kerr.NotLeaderForPartition.Code},
	{replication.ErrPartitionStopped, kerr.NotLeaderForPartition.Code},
	{replication.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch.Code},
	{replication.ErrUnknownLeaderEpoch, kerr.UnknownLeaderEpoch.Code},
	{replication.ErrNotEnoughReplicas, kerr.NotEnoughReplicas.Code},
	{replication.ErrOffsetNotAvailable, kerr.OffsetNotAvailable.Code},
	{replication.ErrOffsetOutOfRange, kerr.OffsetOutOfRange.Code},
	// A follower's fetch below the leader's local log start (KIP-405); a consumer's is
	// the remote read path's (replication.FetchServer.readRemote) and never gets it.
	{replication.ErrOffsetMovedToTieredStorage, kerr.OffsetMovedToTieredStorage.Code},
	{replication.ErrRemoteStorageNotReady, kerr.KafkaStorageError.Code},
	// A remote read (KIP-405): no remote segment holds the offset any more; the object
	// store failed (Kafka answers that partition KAFKA_STORAGE_ERROR, the others go on).
	{tiered.ErrRemoteSegmentNotFound, kerr.OffsetOutOfRange.Code},
	{tiered.ErrRemoteStorage, kerr.KafkaStorageError.Code},
	{replication.ErrInvalidProducerEpoch, kerr.InvalidProducerEpoch.Code},
	{replication.ErrOutOfOrderSequence, kerr.OutOfOrderSequenceNumber.Code},
	{replication.ErrInvalidTxnState, kerr.InvalidTxnState.Code},
	{replication.ErrTransactionCoordinatorFenced, kerr.TransactionCoordinatorFenced.Code},
	{replication.ErrCorruptProducerSnapshot, kerr.KafkaStorageError.Code},
	{controller.ErrNotController, kerr.NotController.Code},
	{controller.ErrTopicDeletionDisabled, kerr.TopicDeletionDisabled.Code},
	{controller.ErrPolicyViolation, kerr.PolicyViolation.Code},
	{controller.ErrInconsistentClusterID, kerr.InconsistentClusterID.Code},
	{controller.ErrUnsupportedFeatures, kerr.UnsupportedVersion.Code},
	{metadata.ErrInvalidUpdateVersion, kerr.InvalidUpdateVersion.Code},
	{controller.ErrDuplicateBrokerRegistration, kerr.DuplicateBrokerRegistration.Code},
	{controller.ErrStaleBrokerEpoch, kerr.StaleBrokerEpoch.Code},
	{controller.ErrBrokerNotRegistered, kerr.BrokerIDNotRegistered.Code},
	{controller.ErrFencedLeaderEpoch, kerr.FencedLeaderEpoch.Code},
	{controller.ErrStalePartitionEpoch, kerr.InvalidUpdateVersion.Code},
	{controller.ErrInvalidISRChange, kerr.InvalidRequest.Code},
	{metadata.ErrRemoteLogFenced, kerr.FencedLeaderEpoch.Code},
	{metadata.ErrRemoteLogNotLeader, kerr.NotLeaderForPartition.Code},
	{metadata.ErrInvalidRemoteLogTransition, kerr.InvalidRequest.Code},
	{controller.ErrIneligibleReplica, kerr.IneligibleReplica.Code},
	{config.ErrInvalidBrokerConfig, kerr.InvalidConfig.Code},
	{controller.ErrProducerIDsExhausted, kerr.UnknownServerError.Code},
	{coordinator.ErrProducerIDsNotAvailable, kerr.CoordinatorLoadInProgress.Code},
	{controller.ErrInternalTopic, kerr.InvalidRequest.Code},
	{controller.ErrDuplicateTopic, kerr.InvalidRequest.Code},
	{controller.ErrInvalidRequest, kerr.InvalidRequest.Code},
	{coordinator.ErrNotCoordinator, kerr.NotCoordinator.Code},
	{coordinator.ErrLoadInProgress, kerr.CoordinatorLoadInProgress.Code},
	{coordinator.ErrClosed, kerr.NotCoordinator.Code},
	{ErrTopicAuthorizationFailed, kerr.TopicAuthorizationFailed.Code},
	{ErrGroupAuthorizationFailed, kerr.GroupAuthorizationFailed.Code},
	{ErrClusterAuthorizationFailed, kerr.ClusterAuthorizationFailed.Code},
	{ErrSecurityDisabled, kerr.SecurityDisabled.Code},
	{ErrTransactionalIDAuthorizationFailed, kerr.TransactionalIDAuthorizationFailed.Code},
	{ErrOperationNotAttempted, kerr.OperationNotAttempted.Code},
	{auth.ErrInvalidACL, kerr.InvalidRequest.Code},
	{auth.ErrInvalidQuota, kerr.InvalidRequest.Code},
	{context.DeadlineExceeded, kerr.RequestTimedOut.Code},
	{context.Canceled, kerr.RequestTimedOut.Code},
}

// errorCode maps err to a Kafka error code: 0 for nil, the table's code, or -1
// (UNKNOWN_SERVER_ERROR), which the caller logs.
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	for _, e := range errorTable {
		if errors.Is(err, e.err) {
			return e.code
		}
	}
	return kerr.UnknownServerError.Code
}

// errorCodeLogged is errorCode that logs unmapped errors at Error.
func (b *Broker) errorCodeLogged(err error, what string) int16 {
	code := errorCode(err)
	if code == kerr.UnknownServerError.Code {
		b.logger.Error("unexpected error", "request", what, "error", err)
	}
	return code
}

// errorMessage is an error's text for responses that carry one, or nil.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}

// acksAllCode maps an acks=all write's outcome (replication.AcksAllOutcome) to the
// partition's Kafka code; decided is false while the write still waits.
func acksAllCode(o replication.Outcome) (code int16, decided bool) {
	switch o {
	case replication.OutcomeWaiting:
		return 0, false
	case replication.OutcomeNotLeader:
		return kerr.NotLeaderForPartition.Code, true
	case replication.OutcomeNotEnoughReplicasAfterAppend:
		return kerr.NotEnoughReplicasAfterAppend.Code, true
	case replication.OutcomeTimedOut:
		return kerr.RequestTimedOut.Code, true
	case replication.OutcomeStorageError:
		return kerr.KafkaStorageError.Code, true
	}
	return 0, true
}
