package metadata

import "fmt"

// AssignReplicas places partitions × replicationFactor replicas on brokers (sorted ids)
// with Kafka's rack-unaware rule (AdminUtils.assignReplicasToBrokersRackUnaware): the
// first replica of partition p is brokers[(p+startIndex) % n]; the others follow it,
// shifted by nextReplicaShift, which grows by one after every n partitions. The
// controller draws startIndex and nextReplicaShift at random in [0, n) and carries the
// result in the records; this function only computes.
func AssignReplicas(brokers []int32, partitions, replicationFactor, startIndex, nextReplicaShift int) ([][]int32, error) {
	n := len(brokers)
	if partitions <= 0 {
		return nil, fmt.Errorf("%w: %d", ErrInvalidPartitions, partitions)
	}
	if replicationFactor <= 0 {
		return nil, fmt.Errorf("%w: replication factor must be larger than 0", ErrInvalidReplicationFactor)
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: all brokers are currently fenced", ErrInvalidReplicationFactor)
	}
	if replicationFactor > n {
		return nil, fmt.Errorf("%w: the target replication factor of %d cannot be reached because only %d broker(s) are registered", ErrInvalidReplicationFactor, replicationFactor, n)
	}
	startIndex, nextReplicaShift = startIndex%n, nextReplicaShift%n
	out := make([][]int32, partitions)
	current := startIndex
	for p := 0; p < partitions; p++ {
		if p > 0 && p%n == 0 { // Kafka: every n partition ids, whatever the start index
			nextReplicaShift++
		}
		first := current % n
		replicas := []int32{brokers[first]}
		for j := 0; j < replicationFactor-1; j++ {
			replicas = append(replicas, brokers[replicaIndex(first, nextReplicaShift, j, n)])
		}
		out[p] = replicas
		current++
	}
	return out, nil
}

// replicaIndex is Kafka's follower position: first + 1 + (shift + j) % (n - 1), mod n.
func replicaIndex(first, shift, j, n int) int {
	if n == 1 {
		return first
	}
	return (first + 1 + (shift+j)%(n-1)) % n
}
