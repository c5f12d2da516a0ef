// Package metadata is the cluster vocabulary (brokers, topics, partitions, replicas, ISR,
// leader and partition epochs), the replicated record types with append-only type
// numbers, the image of cluster state, and the controller's pure decisions. It performs
// no I/O and reads no clock or randomness: those arrive as parameters.
package metadata
