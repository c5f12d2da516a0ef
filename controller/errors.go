package controller

import "errors"

// Controller errors, mapped to Kafka codes in broker/errors.go.
var (
	// ErrNotController means this node is not the active controller (not the Raft
	// leader, or ceasing to be it): the request belongs to the next controller
	// (NOT_CONTROLLER, which brokers and clients retry).
	ErrNotController = errors.New("controller: not the controller")
)
