package replication

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// buildFromRemote is a follower's answer to OFFSET_MOVED_TO_TIERED_STORAGE (KIP-405,
// Kafka's AbstractFetcherThread.fetchOffsetAndBuildRemoteLogAuxState with
// ReplicaFetcherTierStateMachine): it asks the leader for its local log start offset
// and that offset's epoch (ListOffsets -4), finds the epoch of the offset just below it
// (OffsetForLeaderEpoch of the previous epoch: epochs may have gaps), fetches the leader
// epochs and producer state at the end of the remote segment holding that offset
// (RemoteLog), and starts the local log after that segment with leaderLogStart as its
// log start. Without a RemoteLog it fails with ErrRemoteStorageNotReady and the fetcher
// backs off, as Kafka retries until remote storage is enabled.
func (f *fetcher) buildFromRemote(ctx context.Context, p *Partition, pos FollowerPosition, leaderLogStart int64) error {
	remote := p.opts.Remote
	if remote == nil || !p.TieredOffsets().RemoteStorage {
		return ErrRemoteStorageNotReady
	}
	localStart, epoch, err := f.earliestLocalOffset(ctx, p, pos.LeaderEpoch)
	if err != nil {
		return err
	}
	if localStart <= 0 {
		return fmt.Errorf("%w: the leader's local log starts at %d", ErrRemoteStorageNotReady, localStart)
	}
	target := epoch
	if epoch > 0 {
		// The previous epoch's end is exclusive: if it ends past localStart-1, that
		// offset was written in it (or in the latest epoch before a gap).
		prevEpoch, prevEnd, err := f.offsetForLeaderEpoch(ctx, p, pos.LeaderEpoch, epoch-1)
		if err != nil {
			return err
		}
		if prevEnd > localStart-1 && prevEpoch >= 0 {
			target = prevEpoch
		}
	}
	aux, err := remote.FetchRemoteLogAuxState(ctx, p.Topic, p.ID, target, localStart-1)
	if err != nil {
		return err
	}
	if aux.NextOffset < localStart {
		return fmt.Errorf("replication: remote segment of %s-%d ends at %d, below the leader's local log start %d", p.Topic, p.ID, aux.NextOffset-1, localStart)
	}
	return p.BuildFromRemote(aux, leaderLogStart)
}

// earliestLocalOffset asks the leader for its local log start offset and the epoch it
// was written in (ListOffsets v9 with -4, as a broker).
func (f *fetcher) earliestLocalOffset(ctx context.Context, p *Partition, currentLeaderEpoch int32) (int64, int32, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 9
	req.ReplicaID = f.fs.cfg.BrokerID
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = p.Topic
	tp := kmsg.NewListOffsetsRequestTopicPartition()
	tp.Partition, tp.CurrentLeaderEpoch, tp.Timestamp = p.ID, currentLeaderEpoch, -4
	t.Partitions = append(t.Partitions, tp)
	req.Topics = append(req.Topics, t)
	resp, err := f.client.Do(ctx, req)
	if err != nil {
		return 0, 0, err
	}
	r := resp.(*kmsg.ListOffsetsResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return 0, 0, errors.New("replication: malformed ListOffsets response")
	}
	rp := r.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
		return 0, 0, err
	}
	return rp.Offset, rp.LeaderEpoch, nil
}
