package broker

import (
	"slices"
	"sync"

	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/segment"
)

// replicaEligible reports whether broker id may join an ISR this broker leads (Kafka's
// isReplicaIsrEligible, KIP-903): registered in this broker's image, unfenced (the
// controller fences a broker in controlled shutdown, unless the whole cluster is
// stopping) and, when its fetches named a broker epoch, registered at that epoch. The
// controller makes the same checks; making them here first spares it an AlterPartition
// it would refuse at every fetch of a fenced follower.
func (b *Broker) replicaEligible(id int32, brokerEpoch int64) bool {
	im := b.Image()
	return im.Acceptable(id) && (brokerEpoch < 0 || im.Brokers[id].Epoch == brokerEpoch)
}

// replicaEligibleFor is replication.Options.ReplicaEligible for the replica of tp: an
// ineligible follower is noted (isrRefusals), so that the next image in which it is
// unfenced makes the partition ask again.
func (pm *partitionManager) replicaEligibleFor(tp segment.TopicPartition) func(int32, int64) bool {
	return func(id int32, brokerEpoch int64) bool {
		if pm.b.replicaEligible(id, brokerEpoch) {
			return true
		}
		pm.isrRefusals.add(tp, id)
		// recheckISRs may have taken the refusals for a newer image before the line
		// above: that image decides.
		return pm.b.replicaEligible(id, brokerEpoch)
	}
}

// isrRefusals are the followers this broker's leaders left out of an ISR as ineligible,
// by partition. Each image in which such a follower is unfenced makes its partition
// ask again (recheckISRs), whatever images in between said: the reconciler sees only
// the latest image, and a follower fenced and unfenced between two of its passes is
// caught all the same. The zero value is ready; mu is a leaf.
type isrRefusals struct {
	mu      sync.Mutex
	refused map[segment.TopicPartition][]int32
}

// add notes that the leader of tp left follower id out as ineligible.
func (r *isrRefusals) add(tp segment.TopicPartition, id int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if slices.Contains(r.refused[tp], id) {
		return
	}
	if r.refused == nil {
		r.refused = map[segment.TopicPartition][]int32{}
	}
	r.refused[tp] = append(r.refused[tp], id)
}

// takeUnfenced removes the refusals of followers unfenced in im and returns their
// partitions. A follower still ineligible there (registered at another epoch than its
// fetches name) is noted again when its partition asks. The refusals of a broker no
// longer registered are dropped: registered again, it is a new process, whose first
// fetch reads every partition.
func (r *isrRefusals) takeUnfenced(im *metadata.Image) []segment.TopicPartition {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []segment.TopicPartition
	for tp, ids := range r.refused {
		kept := ids[:0]
		unfenced := false
		for _, id := range ids {
			switch br := im.Brokers[id]; {
			case br == nil:
			case br.Fenced:
				kept = append(kept, id)
			default:
				unfenced = true
			}
		}
		if unfenced {
			out = append(out, tp)
		}
		if len(kept) == 0 {
			delete(r.refused, tp)
		} else {
			r.refused[tp] = kept
		}
	}
	return out
}

// recheckISRs makes each partition whose leader here left out a follower unfenced in
// im ask again (Partition.RecheckISR), from the follower's latest fetch: an idle
// partition's follower that caught up while fenced would otherwise wait for the next
// write to join.
func (pm *partitionManager) recheckISRs(im *metadata.Image) {
	for _, tp := range pm.isrRefusals.takeUnfenced(im) {
		if lp := pm.get(tp.Topic, tp.Partition); lp != nil {
			lp.RecheckISR()
		}
	}
}
