package controller

import "errors"

// Controller errors, mapped to Kafka codes in broker/errors.go.
var (
	// ErrNotController means this node is not the active controller (not the Raft
	// leader, or ceasing to be it): the request belongs to the next controller
	// (NOT_CONTROLLER, which brokers and clients retry).
	ErrNotController = errors.New("controller: not the controller")
	// ErrInconsistentClusterID means a registering broker knows another cluster id.
	ErrInconsistentClusterID = errors.New("controller: cluster id does not match")
	// ErrUnsupportedFeatures refuses a broker registration whose supported feature
	// ranges leave out a finalized level (Kafka's UNSUPPORTED_VERSION): it could not
	// follow the cluster.
	ErrUnsupportedFeatures = errors.New("controller: broker does not support the finalized features")
	// ErrDuplicateBrokerRegistration means another incarnation of the registering
	// broker id still has a live session.
	ErrDuplicateBrokerRegistration = errors.New("controller: another incarnation of this broker id has a live session")
	// ErrStaleBrokerEpoch means a broker's request names another broker epoch than its
	// registration's.
	ErrStaleBrokerEpoch = errors.New("controller: stale broker epoch")
	// ErrBrokerNotRegistered means a broker's request names a broker id that is not
	// registered.
	ErrBrokerNotRegistered = errors.New("controller: broker id not registered")
	// ErrFencedLeaderEpoch means an ISR change starts from an older leader epoch.
	ErrFencedLeaderEpoch = errors.New("controller: fenced leader epoch")
	// ErrStalePartitionEpoch means an ISR change starts from an older partition epoch.
	ErrStalePartitionEpoch = errors.New("controller: stale partition epoch")
	// ErrInvalidISRChange means an ISR change comes from a broker that is not the
	// leader, or names an ISR without the leader or outside the replicas.
	ErrInvalidISRChange = errors.New("controller: invalid ISR change")
	// ErrIneligibleReplica means an ISR change names a fenced or unregistered broker.
	ErrIneligibleReplica = errors.New("controller: ineligible replica")
	// ErrInternalTopic refuses a user's create, delete or produce on an internal topic
	// (its text is the one clients have always been answered).
	ErrInternalTopic = errors.New("broker: internal topic")
	// ErrTopicDeletionDisabled means delete.topic.enable is false.
	ErrTopicDeletionDisabled = errors.New("broker: topic deletion is disabled")
	// ErrInvalidRequest is a request Kafka refuses with INVALID_REQUEST (a resource
	// named twice, a config of the wrong resource type).
	ErrInvalidRequest = errors.New("broker: invalid request")
	// ErrProducerIDsExhausted means the cluster handed out every producer id.
	ErrProducerIDsExhausted = errors.New("broker: producer ids exhausted")
)
