package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/segment"
	"github.com/petrel-broker/petrel/tiered"
	"github.com/twmb/franz-go/pkg/kerr"
)

// errRemoteLogStopped ends a remote log metadata write when the broker stops.
var errRemoteLogStopped = errors.New("broker: remote log metadata: the broker is shutting down")

// remoteLogMetadata is Kafka's RemoteLogMetadataManager over the Raft metadata
// (tiered.RemoteLogMetadataManager): writes go to the controller as RemoteLogSegments
// requests and return once this broker's image has applied them; reads are of the
// image.
type remoteLogMetadata struct{ b *Broker }

var _ tiered.RemoteLogMetadataManager = remoteLogMetadata{}

// AddRemoteLogSegmentMetadata records md's COPY_SEGMENT_STARTED.
func (m remoteLogMetadata) AddRemoteLogSegmentMetadata(ctx context.Context, md *tiered.RemoteLogSegmentMetadata, leaderEpoch int32) error {
	return m.write(ctx, tiered.AddRecord(md, leaderEpoch))
}

// UpdateRemoteLogSegmentMetadata records a segment's next state.
func (m remoteLogMetadata) UpdateRemoteLogSegmentMetadata(ctx context.Context, u tiered.RemoteLogSegmentMetadataUpdate, leaderEpoch int32) error {
	return m.write(ctx, tiered.UpdateRecord(u, leaderEpoch))
}

// write sends one change to the controller and waits until the image applied it, so
// that what this broker reads next (the highest copied offset) includes it.
func (m remoteLogMetadata) write(ctx context.Context, rec metadata.RemoteLogSegmentRecord) error {
	return m.writeBatch(ctx, []metadata.RemoteLogSegmentRecord{rec})[0]
}

// writeBatch sends changes to the controller in one request (one Raft entry for the
// valid ones) and waits until the image applied those it accepted; it returns each
// change's outcome in order. A refusal of a segment the controller does not hold, or
// holds in a state the change cannot follow, matches tiered.ErrSegmentUnknown.
func (m remoteLogMetadata) writeBatch(ctx context.Context, recs []metadata.RemoteLogSegmentRecord) []error {
	b := m.b
	outcomes := make([]error, len(recs))
	fail := func(err error) []error {
		for i := range outcomes {
			outcomes[i] = fmt.Errorf("remote log metadata: %w", err)
		}
		return outcomes
	}
	req := &remoteLogSegmentsRequest{BrokerID: b.cfg.NodeID, BrokerEpoch: b.brokerEpoch.Load(), Changes: recs}
	resp, err := b.forwardToController(ctx, req)
	if err != nil {
		return fail(err)
	}
	r := resp.(*remoteLogSegmentsResponse)
	if r.ErrorCode != 0 {
		return fail(kerr.ErrorForCode(r.ErrorCode))
	}
	if len(r.ErrorCodes) != len(recs) {
		return fail(fmt.Errorf("%d answers to %d changes", len(r.ErrorCodes), len(recs)))
	}
	for i, code := range r.ErrorCodes {
		if code == 0 {
			continue
		}
		err := kerr.ErrorForCode(code)
		if code == kerr.InvalidRequest.Code || code == kerr.UnknownTopicOrPartition.Code {
			err = fmt.Errorf("%w: %w", tiered.ErrSegmentUnknown, err) // controller/remote_log.go's refusals
		}
		outcomes[i] = fmt.Errorf("remote log metadata: %s of segment %s refused: %w", recs[i].Segment.State, recs[i].Segment.ID, err)
	}
	for {
		changed := b.machine.Changed()
		im, applied := b.Image(), true
		for i, rec := range recs {
			applied = applied && (outcomes[i] != nil || remoteStateApplied(im, rec))
		}
		if applied {
			return outcomes
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fail(ctx.Err())
		case <-b.stop:
			return fail(errRemoteLogStopped)
		}
	}
}

// remoteStateApplied reports whether im holds rec's segment in rec's state (gone, for
// DELETE_SEGMENT_FINISHED).
func remoteStateApplied(im *metadata.Image, rec metadata.RemoteLogSegmentRecord) bool {
	segs := im.RemoteLogSegments(rec.TopicID, rec.PartitionID)
	i := slices.IndexFunc(segs, func(s metadata.RemoteLogSegment) bool { return s.ID == rec.Segment.ID })
	if rec.Segment.State == metadata.DeleteSegmentFinished {
		return i < 0
	}
	return i >= 0 && segs[i].State == rec.Segment.State
}

// ListRemoteLogSegments returns the partition's remote segments from the image.
func (m remoteLogMetadata) ListRemoteLogSegments(tp tiered.TopicIDPartition) []*tiered.RemoteLogSegmentMetadata {
	segs := m.b.Image().RemoteLogSegments(tp.TopicID, tp.Partition)
	out := make([]*tiered.RemoteLogSegmentMetadata, len(segs))
	for i, s := range segs {
		out[i] = tiered.FromImage(tp, s)
	}
	return out
}

// RemoteLogSegmentMetadata returns the copied segment holding offset in epochForOffset.
func (m remoteLogMetadata) RemoteLogSegmentMetadata(tp tiered.TopicIDPartition, epochForOffset int32, offset int64) (*tiered.RemoteLogSegmentMetadata, bool) {
	return tiered.SegmentFor(m.ListRemoteLogSegments(tp), epochForOffset, offset)
}

// HighestOffsetForEpoch returns the highest copied offset of leaderEpoch.
func (m remoteLogMetadata) HighestOffsetForEpoch(tp tiered.TopicIDPartition, leaderEpoch int32) (int64, bool) {
	return tiered.HighestOffsetForEpoch(m.ListRemoteLogSegments(tp), leaderEpoch)
}

// remoteLogBounds are a replica's highest copied offset and remote log start offset
// from its partition's remote segments (ascending start offset): the highest offset of
// the replica's own lineage the copied segments hold (tiered.HighestCopiedOnLineage over
// its leader-epoch cache entries and log end offset: an epoch's records copied by a
// leader of another lineage past the replica's end of that epoch never count), and the
// first offset of the oldest copied segment; -1 and -1 when none is copied.
func remoteLogBounds(segs []metadata.RemoteLogSegment, epochs []segment.EpochEntry, logEnd int64) (highestCopied, remoteLogStart int64) {
	remoteLogStart = -1
	copied := make([]*tiered.RemoteLogSegmentMetadata, 0, len(segs))
	for _, s := range segs {
		if s.State != metadata.CopySegmentFinished {
			continue
		}
		if remoteLogStart < 0 {
			remoteLogStart = s.StartOffset
		}
		copied = append(copied, tiered.FromImage(tiered.TopicIDPartition{}, s))
	}
	return tiered.HighestCopiedOnLineage(copied, tieredEpochs(epochs), logEnd), remoteLogStart
}

// updateRemoteLogStates hands each local replica of a tiered topic its remote log
// bounds (replication.Partition.SetRemoteLogState) when its topic's remote segments
// changed in im or the replica just opened, and -1, -1 when the topic has none left
// (reconciler goroutine only; on every broker, leader or follower). An entry that
// changes no remote log costs a pointer comparison per tiered topic.
func (pm *partitionManager) updateRemoteLogStates(im *metadata.Image) {
	all := pm.remoteOpened.Swap(false)
	for id := range pm.remoteTopics {
		if rl := im.RemoteLogs[id]; rl == nil || rl.Deleted {
			delete(pm.remoteTopics, id)
			pm.setRemoteLogStates(im.TopicByID(id), nil)
		}
	}
	for id, rl := range im.RemoteLogs {
		if rl.Deleted || (!all && pm.remoteTopics[id] == rl) {
			continue
		}
		if pm.remoteTopics == nil {
			pm.remoteTopics = map[metadata.Uuid]*metadata.RemoteTopicLog{}
		}
		pm.remoteTopics[id] = rl
		pm.setRemoteLogStates(im.TopicByID(id), rl)
	}
}

// setRemoteLogStates sets the remote log bounds of t's local replicas from rl (nil:
// none) where rl is not the one they were last set from.
func (pm *partitionManager) setRemoteLogStates(t *metadata.Topic, rl *metadata.RemoteTopicLog) {
	if t == nil {
		return
	}
	for _, p := range t.Partitions {
		lp := pm.get(t.Name, p.ID)
		if lp == nil || (rl != nil && lp.remoteSeen == rl) {
			continue
		}
		lp.remoteSeen = rl
		var segs []metadata.RemoteLogSegment
		if rl != nil {
			segs = rl.Partitions[p.ID]
		}
		setRemoteLogBounds(lp, segs)
	}
}

// setRemoteLogBounds sets lp's remote log bounds from its partition's remote segments
// segs and its own lineage (remoteLogBounds).
func setRemoteLogBounds(lp *localPartition, segs []metadata.RemoteLogSegment) {
	lp.SetRemoteLogStateBy(func(epochs []segment.EpochEntry, logEnd int64) (int64, int64) {
		return remoteLogBounds(segs, epochs, logEnd)
	})
}

// refreshRemoteLogBounds sets lp's remote log bounds again from im when its topic has
// remote segments (before each retention pass, maintenance goroutine): the bound of a
// replica depends on its own log too, which moves between image changes — a follower
// catching up, a replica just opened — so local retention works from a fresh one. An
// older image than the reconciler's last gives a lower bound and no lower log start:
// the safe direction.
func refreshRemoteLogBounds(im *metadata.Image, lp *localPartition) {
	if rl := im.RemoteLogs[lp.topicID]; rl != nil && !rl.Deleted {
		setRemoteLogBounds(lp, rl.Partitions[lp.ID])
	}
}
