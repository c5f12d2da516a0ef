package metadata

import (
	"fmt"
	"slices"
)

// AssignReplicasRackAware places partitions × replicationFactor replicas on brokers
// with Kafka's rack-aware rule (AdminUtils.assignReplicasToBrokersRackAware, the
// placement kafka-reassign-partitions --generate also uses): the brokers are first
// interlaced by rack (the first broker of each rack in rack order, then the second of
// each, ...), then each partition's leader walks that list round-robin and its
// followers follow it, shifted as in AssignReplicas, skipping a broker whose rack
// already holds a replica while some rack holds none, and a broker that already holds
// one. So no two replicas of a partition share a rack while there are at least
// replicationFactor racks, and leaders and replicas spread evenly over racks and
// brokers. racks maps a broker id to its rack (broker.rack); a broker missing from it
// or with an empty rack counts as a rack of its own name "" (as KRaft's placer treats a
// broker without a rack). When no broker has a rack, the result is AssignReplicas'.
// startIndex and nextReplicaShift are the controller's random draws, as in
// AssignReplicas.
func AssignReplicasRackAware(brokers []int32, racks map[int32]string, partitions, replicationFactor, startIndex, nextReplicaShift int) ([][]int32, error) {
	if !anyRack(brokers, racks) {
		return AssignReplicas(brokers, partitions, replicationFactor, startIndex, nextReplicaShift)
	}
	// AssignReplicas' checks, on an empty placement, give the same errors.
	if _, err := AssignReplicas(brokers, 1, replicationFactor, 0, 0); err != nil || partitions <= 0 {
		if err == nil {
			err = fmt.Errorf("%w: %d", ErrInvalidPartitions, partitions)
		}
		return nil, err
	}
	arranged, rackCount := RackAlternatedBrokers(brokers, racks)
	n := len(arranged)
	startIndex, nextReplicaShift = startIndex%n, nextReplicaShift%n
	out := make([][]int32, partitions)
	for p := 0; p < partitions; p++ {
		if p > 0 && p%n == 0 {
			nextReplicaShift++
		}
		first := (p + startIndex) % n
		leader := arranged[first]
		replicas := []int32{leader}
		racksUsed := map[string]bool{racks[leader]: true}
		for k := 0; len(replicas) < replicationFactor; k++ {
			b := arranged[replicaIndex(first, nextReplicaShift*rackCount, k, n)]
			rackFree := !racksUsed[racks[b]] || len(racksUsed) == rackCount
			brokerFree := !slices.Contains(replicas, b) // replicas < n here, so a broker is free
			if rackFree && brokerFree {
				replicas = append(replicas, b)
				racksUsed[racks[b]] = true
			}
		}
		out[p] = replicas
	}
	return out, nil
}

// RackAlternatedBrokers orders brokers by rack in turn: the lowest id of each rack
// (racks in name order), then the second lowest of each, and so on; it also returns
// the number of distinct racks. For brokers 0,1 in "a", 2 in "b" and 3,4 in "c":
// 0, 2, 3, 1, 4.
func RackAlternatedBrokers(brokers []int32, racks map[int32]string) ([]int32, int) {
	byRack := map[string][]int32{}
	for _, b := range brokers {
		byRack[racks[b]] = append(byRack[racks[b]], b)
	}
	names := make([]string, 0, len(byRack))
	for name, ids := range byRack {
		slices.Sort(ids)
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]int32, 0, len(brokers))
	for i := 0; len(out) < len(brokers); i++ {
		for _, name := range names {
			if ids := byRack[name]; i < len(ids) {
				out = append(out, ids[i])
			}
		}
	}
	return out, len(names)
}

func anyRack(brokers []int32, racks map[int32]string) bool {
	for _, b := range brokers {
		if racks[b] != "" {
			return true
		}
	}
	return false
}

// BrokerRacks returns the rack (broker.rack) of every registered broker that has one.
func (im *Image) BrokerRacks() map[int32]string {
	out := map[int32]string{}
	for id, b := range im.Brokers {
		if b.Rack != "" {
			out[id] = b.Rack
		}
	}
	return out
}
