package controller

import (
	"context"
	"fmt"

	"github.com/petrel-broker/petrel/metadata"
)

// ReplicaDir is one replica a broker assigns to a log directory (AssignReplicasToDirs).
type ReplicaDir struct {
	Ref metadata.ReplicaRef
	// Lost marks Kafka's LOST directory: the replica is offline on the broker.
	Lost bool
}

// AssignReplicasToDirs handles the directory assignments of broker (registered at
// epoch, else ErrStaleBrokerEpoch): the replicas it reports lost (offline) leave
// their ISR and leadership (metadata.OfflineReplicaRecords), in one entry; other
// directories change nothing. It returns the references that name no partition.
func (c *Controller) AssignReplicasToDirs(ctx context.Context, broker int32, epoch int64, replicas []ReplicaDir) (map[metadata.ReplicaRef]bool, error) {
	var unknown map[metadata.ReplicaRef]bool
	_, err := c.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		if br := im.Brokers[broker]; br == nil || br.Epoch != epoch {
			return nil, fmt.Errorf("%w: broker %d epoch %d", ErrStaleBrokerEpoch, broker, epoch)
		}
		unknown = map[metadata.ReplicaRef]bool{}
		var lost []metadata.ReplicaRef
		for _, r := range replicas {
			topic := im.TopicByID(r.Ref.TopicID)
			if topic == nil || r.Ref.Partition < 0 || int(r.Ref.Partition) >= len(topic.Partitions) {
				unknown[r.Ref] = true
				continue
			}
			if r.Lost {
				lost = append(lost, r.Ref)
			}
		}
		records := metadata.OfflineReplicaRecords(im, broker, lost, c.cfg.UncleanAllowed(im))
		if len(records) > 0 {
			c.log.Warn("broker reported offline replicas: moving them out of ISR and leadership",
				"broker", broker, "replicas", len(lost), "changes", len(records))
		}
		return records, nil
	})
	if err != nil {
		return nil, err // the plan may still run when ctx ended: unknown is not read
	}
	return unknown, nil
}
