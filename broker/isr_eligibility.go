package broker

import (
	"slices"

	"github.com/petrel-broker/petrel/metadata"
)

// replicaEligible reports whether broker id may join an ISR this broker leads
// (replication.Options.ReplicaEligible, Kafka's isReplicaIsrEligible): registered in
// this broker's image, unfenced (the controller fences a broker in controlled shutdown)
// and, when its fetches named a broker epoch, registered at that epoch (KIP-903). The
// controller makes the same checks; making them here first spares it an AlterPartition
// it would refuse at every fetch of a fenced follower.
func (b *Broker) replicaEligible(id int32, brokerEpoch int64) bool {
	br := b.Image().Brokers[id]
	return br != nil && !br.Fenced && (brokerEpoch < 0 || br.Epoch == brokerEpoch)
}

// newlyEligibleBrokers returns the brokers unfenced in im that were not unfenced at the
// same epoch in prev: unfenced, or registered again.
func newlyEligibleBrokers(prev, im *metadata.Image) []int32 {
	var ids []int32
	for id, br := range im.Brokers {
		if br.Fenced {
			continue
		}
		if old := prev.Brokers[id]; old == nil || old.Fenced || old.Epoch != br.Epoch {
			ids = append(ids, id)
		}
	}
	return ids
}

// recheckISRs asks each replica this broker leads to reconsider a follower out of its
// ISR that became eligible between prev and im (Partition.RecheckISR): an idle
// partition's follower that caught up while fenced would otherwise wait for the next
// write to join. It walks im's partitions only when some broker became eligible.
func (pm *partitionManager) recheckISRs(prev, im *metadata.Image) {
	ids := newlyEligibleBrokers(prev, im)
	if len(ids) == 0 {
		return
	}
	self := pm.b.cfg.NodeID
	for name, t := range im.Topics {
		for _, p := range t.Partitions {
			if p.Leader != self || len(p.ISR) >= len(p.Replicas) {
				continue
			}
			out := slices.ContainsFunc(ids, func(id int32) bool {
				return slices.Contains(p.Replicas, id) && !slices.Contains(p.ISR, id)
			})
			if lp := pm.get(name, p.ID); out && lp != nil {
				lp.RecheckISR()
			}
		}
	}
}
