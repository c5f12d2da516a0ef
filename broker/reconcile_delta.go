package broker

import (
	"slices"

	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/segment"
)

// reconcileDelta makes the local replicas match im, which follows prev with the same
// configs, looking only at what changed: images share every topic and partition an
// entry did not touch, so a topic whose pointer is prev's is skipped whole, and in a
// changed topic only the partitions whose record changed are applied. A fence, an
// unfence or a leader move of n partitions thus costs O(topics + n) here, not
// O(all partitions); a one-partition ISR change costs O(topics). Replicas of removed
// topics, and of partitions reassigned away, are stopped and deleted as a full pass
// would. It returns false when the broker stops.
func (pm *partitionManager) reconcileDelta(prev, im *metadata.Image) bool {
	self := pm.b.cfg.NodeID
	var changed []string
	for name, t := range im.Topics {
		if prev.Topics[name] != t {
			changed = append(changed, name)
		}
	}
	slices.Sort(changed) // the order a full pass applies them in
	var toOpen []replicaToOpen
	for _, name := range changed {
		t, old := im.Topics[name], prev.Topics[name]
		if old != nil && old.ID != t.ID {
			old = nil // recreated: every partition is new (reconcilePartition replaces the replica)
		}
		var settings *topicSettings
		for _, p := range t.Partitions {
			if old != nil && int(p.ID) < len(old.Partitions) && old.Partitions[p.ID] == p {
				continue
			}
			select {
			case <-pm.b.stop:
				return false
			default:
			}
			if !slices.Contains(p.Replicas, self) {
				if lp := pm.get(name, p.ID); lp != nil {
					pm.remove(segment.TopicPartition{Topic: name, Partition: p.ID}, true) // reassigned away
				}
				continue
			}
			if settings == nil {
				settings = pm.b.topicSettings(im, name)
			}
			toOpen = pm.reconcilePartition(t, p, settings, toOpen)
		}
	}
	for name, old := range prev.Topics {
		if t := im.Topics[name]; t != nil && t.ID == old.ID {
			continue
		}
		for _, p := range old.Partitions { // deleted (or recreated) topic
			if lp := pm.get(name, p.ID); lp != nil && lp.topicID == old.ID {
				pm.remove(segment.TopicPartition{Topic: name, Partition: p.ID}, true)
			}
		}
	}
	if !pm.openConcurrently(toOpen) {
		return false
	}
	pm.b.reconcileCoordinators(im)
	pm.b.dropUnledSharePartitions()
	return true
}
