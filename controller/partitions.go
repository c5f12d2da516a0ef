package controller

// CreatePartitions's decision: raise a topic's partition count, placing the new
// partitions by topic creation's rule or by an explicit assignment.

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"slices"

	"github.com/petrel-broker/petrel/metadata"
)

// PartitionsSpec raises topic Topic to Count partitions.
type PartitionsSpec struct {
	Topic string
	Count int32
	// Assignment is one replica list per new partition, or nil to place them.
	Assignment [][]int32
}

// CreatePartitions validates spec against the latest image and, unless validateOnly,
// commits the new partitions, returning the image after them (validateOnly: the image
// it was checked against). An internal topic is refused.
func (c *Controller) CreatePartitions(ctx context.Context, spec PartitionsSpec, validateOnly bool) (*metadata.Image, error) {
	if IsInternalTopic(spec.Topic) {
		return nil, InternalTopicError("add partitions to", spec.Topic)
	}
	if validateOnly {
		im := c.cfg.Image()
		_, err := planPartitions(im, spec)
		return im, err
	}
	return c.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		return planPartitions(im, spec)
	})
}

// planPartitions returns the PartitionRecords that raise spec.Topic to spec.Count
// partitions.
func planPartitions(im *metadata.Image, spec PartitionsSpec) ([]metadata.Record, error) {
	topic := im.Topic(spec.Topic)
	if topic == nil {
		return nil, fmt.Errorf("%w: topic '%s' does not exist", metadata.ErrUnknownTopic, spec.Topic)
	}
	current := int32(len(topic.Partitions))
	switch {
	case spec.Count < current:
		return nil, fmt.Errorf("%w: topic currently has %d partitions, which is higher than the requested %d", metadata.ErrInvalidPartitions, current, spec.Count)
	case spec.Count == current:
		return nil, fmt.Errorf("%w: topic already has %d partitions", metadata.ErrInvalidPartitions, current)
	}
	added := int(spec.Count - current)
	if int64(added) > MaxPartitionsPerRequest {
		return nil, TooManyPartitions(int64(added))
	}
	if err := CheckRecordsPerUserOp(added); err != nil {
		return nil, err
	}
	rf := len(topic.Partitions[0].Replicas)
	var assignment [][]int32
	if spec.Assignment != nil {
		if len(spec.Assignment) != added {
			return nil, fmt.Errorf("%w: increasing the number of partitions by %d but %d assignments provided", metadata.ErrInvalidReplicaAssignment, added, len(spec.Assignment))
		}
		for i, replicas := range spec.Assignment {
			if len(replicas) != rf {
				return nil, fmt.Errorf("%w: partition %d has %d replicas, the topic's replication factor is %d", metadata.ErrInvalidReplicaAssignment, int(current)+i, len(replicas), rf)
			}
			for j, id := range replicas {
				if _, ok := im.Brokers[id]; !ok || slices.Contains(replicas[:j], id) {
					return nil, fmt.Errorf("%w: partition %d: broker %d is unknown or repeated", metadata.ErrInvalidReplicaAssignment, int(current)+i, id)
				}
			}
			assignment = append(assignment, replicas)
		}
	} else {
		brokers := im.PlacementBrokerIDs() // unfenced and not cordoned (KIP-1066)
		if err := im.PlacementShortfall(rf); err != nil {
			return nil, err
		}
		n := max(len(brokers), 1)
		all, err := metadata.AssignReplicasRackAware(brokers, im.BrokerRacks(), int(spec.Count), rf, mrand.IntN(n), mrand.IntN(n))
		if err != nil {
			return nil, err
		}
		assignment = all[current:]
	}
	records := make([]metadata.Record, 0, added)
	for i, replicas := range assignment {
		records = append(records, newPartitionRecord(im, topic.ID, current+int32(i), replicas))
	}
	return records, nil
}

// newPartitionRecord creates a partition led by its first unfenced replica, with the
// unfenced replicas as its ISR (the first replica alone, leaderless, when all are
// fenced), as topic creation does.
func newPartitionRecord(im *metadata.Image, id metadata.Uuid, partition int32, replicas []int32) metadata.PartitionRecord {
	isr := slices.DeleteFunc(slices.Clone(replicas), func(r int32) bool { return !im.Acceptable(r) })
	leader := int32(-1)
	if len(isr) > 0 {
		leader = isr[0]
	} else {
		isr = []int32{replicas[0]}
	}
	return metadata.PartitionRecord{TopicID: id, PartitionID: partition, Replicas: replicas, ISR: isr, Leader: leader}
}
