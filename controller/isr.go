package controller

import (
	"context"
	"fmt"
	"slices"

	"github.com/petrel-broker/petrel/metadata"
)

// ISRChange is the ISR a partition leader asks for one partition (AlterPartition).
type ISRChange struct {
	// Topic names the topic, unless ByID: then TopicID does.
	Topic   string
	TopicID metadata.Uuid
	ByID    bool
	// Partition, and the leader and partition epochs the leader's change starts from.
	Partition      int32
	LeaderEpoch    int32
	PartitionEpoch int32
	// ISR is the requested in-sync replica set.
	ISR []int32
	// BrokerEpochs, when set (AlterPartition v3+, KIP-903), holds in ISR's order the
	// broker epoch the leader names for each member (a Petrel leader: its own, and the
	// epoch of the latest fetch of each member it adds); -1 is not checked.
	BrokerEpochs []int64
}

// AlterISR commits the ISR changes broker (registered at epoch; -1 skips the check)
// asks for as partition leader, the valid ones in one entry, and returns each change's
// outcome in order: nil when committed, else the first check it fails, in Kafka's
// order: an unknown partition (metadata.ErrUnknownPartition); epochs newer than the
// image's (ErrNotController: this controller is behind); an older leader epoch
// (ErrFencedLeaderEpoch); a sender that is not the leader (ErrInvalidISRChange); an
// older partition epoch (ErrStalePartitionEpoch); an ISR that lacks the leader or is
// not a subset of the replicas (ErrInvalidISRChange); a member that is fenced,
// unregistered or registered at another broker epoch than the one the change names for
// it (ErrIneligibleReplica; KIP-903: its fetches came from an incarnation that is
// gone). A broker that is not registered at epoch fails the whole request with
// ErrStaleBrokerEpoch.
func (c *Controller) AlterISR(ctx context.Context, broker int32, epoch int64, changes []ISRChange) ([]error, error) {
	outcomes := make([]error, len(changes))
	_, err := c.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		if br := im.Brokers[broker]; br == nil || (epoch >= 0 && br.Epoch != epoch) {
			return nil, fmt.Errorf("%w: broker %d epoch %d", ErrStaleBrokerEpoch, broker, epoch)
		}
		var records []metadata.Record
		for i, ch := range changes {
			record, err := checkISRChange(im, broker, ch)
			outcomes[i] = err
			if err == nil {
				records = append(records, record)
			}
		}
		return records, nil
	})
	if err != nil {
		return nil, err
	}
	return outcomes, nil
}

// checkISRChange returns the record committing ch from broker, or the first check ch
// fails (AlterISR). Pure.
func checkISRChange(im *metadata.Image, broker int32, ch ISRChange) (metadata.PartitionChangeRecord, error) {
	topic := im.Topic(ch.Topic)
	if ch.ByID {
		topic = im.TopicByID(ch.TopicID)
	}
	if topic == nil || ch.Partition < 0 || int(ch.Partition) >= len(topic.Partitions) {
		return metadata.PartitionChangeRecord{}, fmt.Errorf("%w: %s-%d", metadata.ErrUnknownPartition, ch.Topic, ch.Partition)
	}
	p := topic.Partitions[ch.Partition]
	var err error
	switch {
	case ch.LeaderEpoch > p.LeaderEpoch || ch.PartitionEpoch > p.PartitionEpoch:
		err = ErrNotController
	case ch.LeaderEpoch < p.LeaderEpoch:
		err = ErrFencedLeaderEpoch
	case broker != p.Leader:
		err = fmt.Errorf("%w: broker %d is not the leader", ErrInvalidISRChange, broker)
	case ch.PartitionEpoch < p.PartitionEpoch:
		err = ErrStalePartitionEpoch
	case !slices.Contains(ch.ISR, p.Leader) || slices.ContainsFunc(ch.ISR, func(id int32) bool { return !slices.Contains(p.Replicas, id) }):
		err = fmt.Errorf("%w: ISR %v with leader %d and replicas %v", ErrInvalidISRChange, ch.ISR, p.Leader, p.Replicas)
	case slices.ContainsFunc(ch.ISR, func(id int32) bool { return !im.Acceptable(id) }):
		err = ErrIneligibleReplica
	default:
		if i := staleMemberEpoch(im, ch); i >= 0 {
			err = fmt.Errorf("%w: broker %d at broker epoch %d, registered at %d", ErrIneligibleReplica,
				ch.ISR[i], ch.BrokerEpochs[i], im.Brokers[ch.ISR[i]].Epoch)
			break
		}
		return metadata.PartitionChangeRecord{TopicID: topic.ID, PartitionID: p.ID, ISR: slices.Clone(ch.ISR)}, nil
	}
	return metadata.PartitionChangeRecord{}, err
}

// staleMemberEpoch returns the index in ch.ISR of the first member whose broker epoch ch
// names and the image does not register it at (KIP-903), or -1. Every member is
// registered (checked before).
func staleMemberEpoch(im *metadata.Image, ch ISRChange) int {
	for i, id := range ch.ISR {
		if i < len(ch.BrokerEpochs) && ch.BrokerEpochs[i] >= 0 && im.Brokers[id].Epoch != ch.BrokerEpochs[i] {
			return i
		}
	}
	return -1
}
