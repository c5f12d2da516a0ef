package replication

import "fmt"

// DeleteRecordsBefore moves the leader's log start offset to offset (DeleteRecords):
// -1 means the high watermark; an offset below 0 or above the high watermark is
// ErrOffsetOutOfRange; one at or below the current log start changes nothing. Segments
// wholly below the new start are deleted with their producer snapshots. Followers
// follow through the log_start_offset of their fetch answers. It returns the offset
// the replica set's low watermark must reach for the request to be done (Kafka's
// requested offset; -1 converted to the high watermark), see LowWatermark.
func (p *Partition) DeleteRecordsBefore(offset int64) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role != Leader {
		return 0, ErrNotLeader
	}
	if offset == -1 {
		offset = p.highWatermark
	}
	if offset < 0 || offset > p.highWatermark {
		return 0, fmt.Errorf("%w: cannot delete records of %s-%d before %d: the high watermark is %d", ErrOffsetOutOfRange, p.Topic, p.ID, offset, p.highWatermark)
	}
	first := p.log.FirstSegmentBaseOffset()
	if err := p.log.AdvanceLogStartOffset(offset); err != nil {
		return 0, err
	}
	if p.log.FirstSegmentBaseOffset() != first {
		p.trimProducerSnapshotsLocked()
	}
	p.notifyLocked()
	return offset, nil
}

// LogSize returns the bytes of the replica's segments.
func (p *Partition) LogSize() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.Size()
}

// LowWatermark returns, on the leader, the smallest log start offset over the replica
// set (Kafka's low watermark, which DeleteRecords answers): the leader's own and that
// of every other replica for which eligible is true (Kafka counts the replicas on live,
// unfenced brokers), as each last reported it in its fetches. A counted replica that
// has not reported yet makes it -1 (unknown). ErrNotLeader off the leader.
func (p *Partition) LowWatermark(eligible func(broker int32) bool) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.role != Leader {
		return 0, ErrNotLeader
	}
	low := p.log.LogStartOffset()
	for _, r := range p.replicas {
		if r == p.opts.BrokerID || eligible != nil && !eligible(r) {
			continue
		}
		st := p.followers[r]
		if st == nil || st.logStartOffset < 0 {
			return -1, nil
		}
		low = min(low, st.logStartOffset)
	}
	return low, nil
}
