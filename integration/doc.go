// Package integration holds multi-node tests that run whole Petrel clusters inside one
// test process and drive them with real Kafka clients. It has no non-test code.
package integration
