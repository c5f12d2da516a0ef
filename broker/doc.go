// Package broker is one Petrel node, the composition root: configuration, startup and
// shutdown, Raft wiring (raft-boltdb/v2, file snapshots, TCP transport), the reconciler
// that turns metadata changes into leader and follower replicas, the controller loop on
// the Raft leader, one handler file per Kafka API, and the one table that maps domain
// errors to Kafka error codes.
package broker
