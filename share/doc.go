// Package share is the share-partition state machine of KIP-932 share groups: what the
// partition leader keeps per (share group, topic-partition) to hand records to the
// members of a share group one acquisition at a time, Kafka 4.2's
// kafka.server.share.SharePartition.
//
// A Partition holds the share-partition start offset (SPSO), the end offset (SPEO) and
// the in-flight records between them, each Available, Acquired (by one member, under a
// lock that expires), Acknowledged or Archived, with its delivery count. Its operations
// take the time as an argument and return what changed as a Change, the
// WriteShareGroupState content a leader hands to the share coordinator; StateLog turns
// changes into the __share_group_state records (ShareSnapshot, key type 0, and
// ShareUpdate, key type 1, byte for byte as Kafka's share-coordinator writes them) and
// replays them, and Load rebuilds a Partition from the replayed state after a leader
// change.
//
// The package is pure: no goroutines, no clock, no I/O. It is not safe for concurrent
// use; the caller (the broker's share-partition manager) holds one lock per Partition.
//
// Layout: partition.go (state, runs, SPSO), acquire.go (ShareFetch acquisition),
// txn.go (read_committed filtering), acknowledge.go (ShareAcknowledge and member
// release), expire.go (acquisition-lock expiry, log start
// offset moves), change.go (the durable change set),
// records.go and records_decode.go (the __share_group_state records), state.go (the
// share coordinator's merged state per key), load.go (rebuilding on a new leader).
package share
