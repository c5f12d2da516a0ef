package controller

import (
	"context"
	"fmt"
	"slices"

	"github.com/petrel-broker/petrel/metadata"
)

// RecordRemoteLogSegments commits the remote segment state changes broker (registered
// at epoch) reports as partition leader (KIP-405's RemoteLogMetadataManager writes,
// Petrel's internal API), the valid ones in one entry, and returns each change's outcome
// in order: nil when committed, else why it was refused: an unknown partition
// (metadata.ErrUnknownPartition); a leader epoch newer than the image's
// (ErrNotController: this controller is behind); a sender that is not the leader
// (metadata.ErrRemoteLogNotLeader) or at an older leader epoch
// (metadata.ErrRemoteLogFenced); a transition Kafka refuses
// (metadata.ErrInvalidRemoteLogTransition); custom metadata or leader epochs past
// their bounds, or epochs out of order (metadata.ErrInvalidRecord). Each change is
// checked against its partition's segments with the earlier valid changes of the
// request applied (one copy of the partition's segments, not a new image per change),
// so a request may start and finish a copy. The sender is each segment's BrokerID,
// whatever the request said. A broker that is not registered at epoch — a negative
// epoch included: a leader always knows its own — fails the whole request with
// ErrStaleBrokerEpoch; more than MaxRemoteLogChangesPerRequest changes fail it with
// ErrPolicyViolation.
func (c *Controller) RecordRemoteLogSegments(ctx context.Context, broker int32, epoch int64, changes []metadata.RemoteLogSegmentRecord) ([]error, error) {
	if len(changes) > MaxRemoteLogChangesPerRequest {
		return nil, fmt.Errorf("%w: %d remote segment changes in one request, the limit is %d", ErrPolicyViolation, len(changes), MaxRemoteLogChangesPerRequest)
	}
	outcomes := make([]error, len(changes))
	_, err := c.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		return remoteLogRecords(im, broker, epoch, changes, outcomes)
	})
	if err != nil {
		return nil, err
	}
	return outcomes, nil
}

// remoteLogRecords is RecordRemoteLogSegments' decision on im: the records of the valid
// changes, each change's outcome in outcomes.
func remoteLogRecords(im *metadata.Image, broker int32, epoch int64, changes []metadata.RemoteLogSegmentRecord, outcomes []error) ([]metadata.Record, error) {
	if br := im.Brokers[broker]; br == nil || epoch < 0 || br.Epoch != epoch {
		return nil, fmt.Errorf("%w: broker %d epoch %d", ErrStaleBrokerEpoch, broker, epoch)
	}
	type partitionKey struct {
		topic     metadata.Uuid
		partition int32
	}
	overlay := map[partitionKey][]metadata.RemoteLogSegment{} // the request's own copies
	var records []metadata.Record
	for i, ch := range changes {
		ch.Segment.BrokerID = broker
		if t := im.TopicByID(ch.TopicID); t != nil && ch.PartitionID >= 0 && int(ch.PartitionID) < len(t.Partitions) &&
			ch.LeaderEpoch > t.Partitions[ch.PartitionID].LeaderEpoch {
			outcomes[i] = fmt.Errorf("%w: leader epoch %d is newer than this controller's", ErrNotController, ch.LeaderEpoch)
			continue
		}
		if outcomes[i] = checkRemoteSegmentBounds(ch.Segment); outcomes[i] != nil {
			continue
		}
		key := partitionKey{ch.TopicID, ch.PartitionID}
		segs, own := overlay[key]
		if !own {
			segs = im.RemoteLogSegments(ch.TopicID, ch.PartitionID)
		}
		if outcomes[i] = metadata.CheckRemoteLogSegmentRecordOn(im, segs, ch); outcomes[i] != nil {
			continue
		}
		if !own {
			segs = slices.Clone(segs)
		}
		overlay[key] = metadata.ApplyRemoteLogSegmentTo(segs, ch)
		records = append(records, ch)
	}
	return records, nil
}

// checkRemoteSegmentBounds refuses what a broker may not make every node keep: custom
// metadata past MaxRemoteCustomMetadataBytes, more than MaxRemoteSegmentLeaderEpochs
// leader epochs, or epochs that do not rise, in epoch and start offset, within the
// segment's offsets (metadata.ErrInvalidRecord).
func checkRemoteSegmentBounds(s metadata.RemoteLogSegment) error {
	if len(s.CustomMetadata) > MaxRemoteCustomMetadataBytes {
		return fmt.Errorf("%w: custom metadata of %d bytes, the limit is %d (remote.log.metadata.custom.metadata.max.bytes)",
			metadata.ErrInvalidRecord, len(s.CustomMetadata), MaxRemoteCustomMetadataBytes)
	}
	if s.State != metadata.CopySegmentStarted {
		return nil // the epochs come with the start only
	}
	if len(s.LeaderEpochs) > MaxRemoteSegmentLeaderEpochs {
		return fmt.Errorf("%w: %d leader epochs in one remote segment, the limit is %d", metadata.ErrInvalidRecord, len(s.LeaderEpochs), MaxRemoteSegmentLeaderEpochs)
	}
	for i, e := range s.LeaderEpochs {
		if e.StartOffset < s.StartOffset || e.StartOffset > s.EndOffset || e.Epoch < 0 ||
			(i > 0 && (e.Epoch <= s.LeaderEpochs[i-1].Epoch || e.StartOffset <= s.LeaderEpochs[i-1].StartOffset)) {
			return fmt.Errorf("%w: leader epochs %v of remote segment [%d, %d]", metadata.ErrInvalidRecord, s.LeaderEpochs, s.StartOffset, s.EndOffset)
		}
	}
	return nil
}
