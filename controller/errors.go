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
	// ErrDuplicateBrokerRegistration means another incarnation of the registering
	// broker id still has a live session.
	ErrDuplicateBrokerRegistration = errors.New("controller: another incarnation of this broker id has a live session")
)
