package replication

import "fmt"

// DeleteRecordsBefore moves the leader's log start offset to offset (DeleteRecords):
// -1 means the high watermark; an offset below 0 or above the high watermark is
// ErrOffsetOutOfRange; one at or below the current log start changes nothing. Segments
// wholly below the new start are deleted with their producer snapshots. Followers
// follow through the log_start_offset of their fetch answers. It returns the new log
// start offset (Kafka's low watermark on this replica).
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
	return p.log.LogStartOffset(), nil
}

// LogSize returns the bytes of the replica's segments.
func (p *Partition) LogSize() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.Size()
}
