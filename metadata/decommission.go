package metadata

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// CordonedLogDirsConfig is Kafka's broker property (KIP-1066) whose non-empty value
// cordons a broker's log directories: no new replica is placed on them. Petrel keeps
// one log directory per broker, so any value cordons the whole broker.
const CordonedLogDirsConfig = "cordoned.log.dirs"

// ReplicaCount returns how many partitions name broker id as a replica (in the
// assignment or as a reassignment target) and the first of them as "topic-partition"
// ("" when none), in topic name order.
func (im *Image) ReplicaCount(id int32) (int, string) {
	n, first := 0, ""
	for _, name := range im.TopicNames() {
		for _, p := range im.Topics[name].Partitions {
			if slices.Contains(p.Replicas, id) || slices.Contains(p.Adding, id) {
				if n == 0 {
					first = name + "-" + strconv.Itoa(int(p.ID))
				}
				n++
			}
		}
	}
	return n, first
}

// Cordoned reports whether broker id is cordoned: its cordoned.log.dirs in the metadata
// log (a per-broker config, as in Kafka) is not empty.
func (im *Image) Cordoned(id int32) bool {
	return im.Configs[ConfigResource{BrokerResource, strconv.Itoa(int(id))}][CordonedLogDirsConfig] != ""
}

// PlacementBrokerIDs returns the brokers new replicas may be placed on, sorted:
// registered, unfenced and not cordoned.
func (im *Image) PlacementBrokerIDs() []int32 {
	return slices.DeleteFunc(im.UnfencedBrokerIDs(), im.Cordoned)
}

// PlacementShortfall explains a replication factor that the placement brokers cannot
// reach because of cordoned brokers; nil when cordoning is not the reason.
func (im *Image) PlacementShortfall(replicationFactor int) error {
	placeable := len(im.PlacementBrokerIDs())
	unfenced := len(im.UnfencedBrokerIDs())
	if replicationFactor <= placeable || replicationFactor > unfenced {
		return nil
	}
	return fmt.Errorf("%w: the target replication factor of %d cannot be reached because only %d broker(s) are registered, unfenced and not cordoned (%d cordoned)",
		ErrInvalidReplicationFactor, replicationFactor, placeable, unfenced-placeable)
}

// UnregisterBrokerRecords removes broker id, with its own dynamic configs: an
// UnregisterBrokerRecord, then a ConfigRecord deleting each of its configs, so that
// nothing in the image names it any more.
func UnregisterBrokerRecords(im *Image, id int32) []Record {
	b, ok := im.Brokers[id]
	if !ok {
		return nil
	}
	records := []Record{UnregisterBrokerRecord{BrokerID: id, BrokerEpoch: b.Epoch}}
	res := ConfigResource{BrokerResource, strconv.Itoa(int(id))}
	for _, name := range slices.Sorted(maps.Keys(im.Configs[res])) {
		records = append(records, ConfigRecord{ResourceType: BrokerResource, ResourceName: res.Name, Name: name})
	}
	return records
}
