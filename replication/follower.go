package replication

import (
	"fmt"
)

// FollowerPosition is what a follower fetch needs from its partition.
type FollowerPosition struct {
	LogEndOffset     int64
	LogStartOffset   int64 // reported to the leader in each fetch (DeleteRecords' low watermark)
	LastFetchedEpoch int32 // latest epoch in the leader epoch cache; -1 when empty
	LeaderEpoch      int32 // the current leader epoch from metadata
	Leader           int32
}

// FollowerPosition returns the follower's fetch position, or false when the replica is
// not following.
func (p *Partition) FollowerPosition() (FollowerPosition, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role != Follower || p.leader < 0 || p.log.Failure() != nil {
		return FollowerPosition{}, false // a failed log fetches no more (it may hold unsynced data)
	}
	return FollowerPosition{LogEndOffset: p.log.LogEndOffset(), LogStartOffset: p.log.LogStartOffset(), LastFetchedEpoch: p.log.LeaderEpochs().LatestEpoch(),
		LeaderEpoch: p.leaderEpoch, Leader: p.leader}, true
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch from this replica's epoch cache: the
// largest epoch at most epoch and where it ends (the log end offset for the latest).
func (p *Partition) EndOffsetForEpoch(epoch int32) (int32, int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.LeaderEpochs().EndOffsetFor(epoch, p.log.LogEndOffset())
}

// AppendAsFollower appends the leader's batches unchanged (fsynced first with
// SyncEveryAppend, so that the next fetch offset the leader sees is durable) and sets
// the high watermark to min(leader's, own log end offset) and the log start offset to
// at least the leader's.
func (p *Partition) AppendAsFollower(records []byte, leaderEpoch int32, leaderHW, leaderLogStart int64) error {
	end, err := p.appendAsFollowerUnsynced(records, leaderEpoch)
	if err != nil {
		return err
	}
	return p.finishFollowerAppend(end, leaderEpoch, leaderHW, leaderLogStart)
}

// appendAsFollowerUnsynced is the first half of AppendAsFollower: it writes the batches
// and returns the log end offset after them (0 when records is empty), without the
// fsync. The fetcher appends every partition of one fetch answer first and then
// finishes them all at once, so that their fsyncs overlap.
func (p *Partition) appendAsFollowerUnsynced(records []byte, leaderEpoch int32) (int64, error) {
	p.mu.Lock()
	if p.role != Follower || p.leaderEpoch != leaderEpoch {
		p.mu.Unlock()
		return 0, fmt.Errorf("%w: no longer following in epoch %d", ErrNotLeader, leaderEpoch)
	}
	var end int64
	if len(records) > 0 {
		info, err := p.log.AppendAsFollower(records)
		if err != nil {
			p.positionVersion.Add(1) // the log may have failed: FollowerPosition says so
			p.mu.Unlock()
			return 0, err
		}
		p.afterAppendLocked(records)
		end = info.LastOffset + 1
	}
	p.mu.Unlock()
	if end > 0 && p.opts.ObserveFollowerAppend != nil {
		p.opts.ObserveFollowerAppend(int64(len(records)))
	}
	return end, nil
}

// finishFollowerAppend is the second half of AppendAsFollower: with SyncEveryAppend it
// fsyncs up to end (nothing when end is 0), then applies the leader's high watermark
// and log start offset, unless the replica stopped following in leaderEpoch meanwhile.
// Until it returns, the fetcher sends no further fetch, so the leader never counts
// offsets this replica has not made durable.
func (p *Partition) finishFollowerAppend(end int64, leaderEpoch int32, leaderHW, leaderLogStart int64) error {
	if end > 0 && p.syncEveryAppend.Load() {
		if err := p.syncTo(end); err != nil {
			p.positionVersion.Add(1) // the log may have failed: FollowerPosition says so
			return err
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.positionVersion.Add(1)
	if p.role != Follower || p.leaderEpoch != leaderEpoch {
		return fmt.Errorf("%w: no longer following in epoch %d", ErrNotLeader, leaderEpoch)
	}
	if leaderLogStart > p.log.LogStartOffset() && leaderLogStart <= p.log.LogEndOffset() {
		first := p.log.FirstSegmentBaseOffset()
		if err := p.log.AdvanceLogStartOffset(leaderLogStart); err != nil {
			return err
		}
		if p.log.FirstSegmentBaseOffset() != first {
			p.trimProducerSnapshotsLocked()
		}
	}
	p.highWatermark = min(leaderHW, p.log.LogEndOffset())
	p.leaderHighWatermark = leaderHW
	p.notifyLocked()
	return nil
}

// TruncateTo truncates a follower's log (at batch boundaries, see segment.Log.TruncateTo)
// and its high watermark.
func (p *Partition) TruncateTo(offset int64) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role != Follower {
		return 0, ErrNotLeader
	}
	p.positionVersion.Add(1)
	before := p.log.LogEndOffset()
	leo, err := p.log.TruncateTo(offset)
	if err != nil {
		return 0, err
	}
	p.highWatermark = min(p.highWatermark, leo)
	p.durableEnd = min(p.durableEnd, leo)
	p.truncations++
	if leo < before {
		p.opts.Logger.Info("truncated the log to follow the leader", "from", before, "to", leo)
		if err := p.afterTruncateLocked(); err != nil {
			return leo, err
		}
	}
	return leo, nil
}

// TruncateFullyAndStartAt empties a follower's log and starts it at offset (the leader's
// log start is past this replica's log).
func (p *Partition) TruncateFullyAndStartAt(offset int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role != Follower {
		return ErrNotLeader
	}
	p.positionVersion.Add(1)
	if err := p.log.TruncateFullyAndStartAt(offset); err != nil {
		return err
	}
	remaining, err := deleteProducerSnapshots(p.log.Dir(), func(int64) bool { return true })
	p.snapshots.update(remaining, err)
	if err != nil {
		return err
	}
	p.producers, p.replay = NewProducerStates(), producerReplay{from: offset} // the log starts here
	p.highWatermark, p.durableEnd = offset, offset
	p.truncations++
	return nil
}

// truncateByLeaderEpoch applies KIP-279 given the leader's answer (leaderEpoch,
// leaderEnd) to OffsetForLeaderEpoch for this replica's latest epoch. It returns the
// epoch to ask about next, or -1 when done.
func (p *Partition) truncateByLeaderEpoch(leaderEpoch int32, leaderEnd int64) (int32, error) {
	pos, ok := p.FollowerPosition()
	if !ok {
		return -1, ErrNotLeader
	}
	if leaderEnd < 0 {
		// The leader knows no epoch at or below ours: keep what is committed.
		_, err := p.TruncateTo(p.State().HighWatermark)
		return -1, err
	}
	ownEpoch, ownEnd := p.EndOffsetForEpoch(leaderEpoch)
	switch {
	case ownEpoch == leaderEpoch:
		_, err := p.TruncateTo(min(leaderEnd, ownEnd, pos.LogEndOffset))
		return -1, err
	case ownEpoch < 0:
		_, err := p.TruncateTo(min(leaderEnd, pos.LogEndOffset))
		return -1, err
	default:
		// This replica never had leaderEpoch: cut to where its own earlier epoch ends
		// and ask again about that epoch.
		if _, err := p.TruncateTo(min(ownEnd, pos.LogEndOffset)); err != nil {
			return -1, err
		}
		return ownEpoch, nil
	}
}
