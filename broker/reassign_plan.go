package broker

import "github.com/petrel-broker/petrel/metadata"

// ProposeAssignment places partitions of replicationFactor replicas on brokers by
// Kafka's rack-unaware rule, starting at the first broker (what `petrel reassign
// --generate` proposes; Kafka draws the start at random).
func ProposeAssignment(brokers []int32, partitions, replicationFactor int) ([][]int32, error) {
	return metadata.AssignReplicas(brokers, partitions, replicationFactor, 0, 0)
}
