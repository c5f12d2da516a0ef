package config

// ReplicaSelectorClassProperty is Kafka's broker property naming the replica selector
// of follower fetching (KIP-392): empty (the default) keeps consumers on the leader.
const ReplicaSelectorClassProperty = "replica.selector.class"

// RackAwareReplicaSelector is Kafka's rack-aware selector class, the one selector
// Petrel builds in: a consumer with client.rack is sent to an in-sync replica in its
// rack.
const RackAwareReplicaSelector = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
