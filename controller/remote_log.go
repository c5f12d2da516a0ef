package controller

import (
	"context"
	"fmt"

	"github.com/petrel-broker/petrel/metadata"
)

// RecordRemoteLogSegments commits the remote segment state changes broker (registered
// at epoch; -1 skips the check) reports as partition leader (KIP-405's
// RemoteLogMetadataManager writes, Petrel's internal API), the valid ones in one entry,
// and returns each change's outcome in order: nil when committed, else why it was
// refused: an unknown partition (metadata.ErrUnknownPartition); a leader epoch newer than
// the image's (ErrNotController: this controller is behind); a sender that is not the
// leader (metadata.ErrRemoteLogNotLeader) or at an older leader epoch
// (metadata.ErrRemoteLogFenced); a transition Kafka refuses
// (metadata.ErrInvalidRemoteLogTransition). Each change is checked against the image
// with the earlier valid changes of the request applied, so a request may start and
// finish a copy. The sender is each segment's BrokerID, whatever the request said. A
// broker that is not registered at epoch fails the whole request with
// ErrStaleBrokerEpoch.
func (c *Controller) RecordRemoteLogSegments(ctx context.Context, broker int32, epoch int64, changes []metadata.RemoteLogSegmentRecord) ([]error, error) {
	outcomes := make([]error, len(changes))
	_, err := c.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		if br := im.Brokers[broker]; br == nil || (epoch >= 0 && br.Epoch != epoch) {
			return nil, fmt.Errorf("%w: broker %d epoch %d", ErrStaleBrokerEpoch, broker, epoch)
		}
		var records []metadata.Record
		cur := im
		for i, ch := range changes {
			ch.Segment.BrokerID = broker
			if t := cur.TopicByID(ch.TopicID); t != nil && ch.PartitionID >= 0 && int(ch.PartitionID) < len(t.Partitions) &&
				ch.LeaderEpoch > t.Partitions[ch.PartitionID].LeaderEpoch {
				outcomes[i] = fmt.Errorf("%w: leader epoch %d is newer than this controller's", ErrNotController, ch.LeaderEpoch)
				continue
			}
			next, err := cur.Apply(cur.Offset, []metadata.Record{ch})
			if outcomes[i] = err; err == nil {
				cur = next
				records = append(records, ch)
			}
		}
		return records, nil
	})
	if err != nil {
		return nil, err
	}
	return outcomes, nil
}
