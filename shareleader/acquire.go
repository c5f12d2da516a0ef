package shareleader

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/segment"
	"github.com/petrel-broker/petrel/share"
)

// acquireParams are a ShareFetch's limits for one partition.
type acquireParams struct {
	memberID   string
	maxRecords int
	batchSize  int
	mode       share.AcquireMode
	maxBytes   int
	// readCommitted is share.isolation.level read_committed, read at each fetch.
	readCommitted bool
	// loadWait bounds the wait for the share partition's load (the fetch's MaxWait
	// left); 0 waits for the load, itself bounded by WriteTimeout.
	loadWait time.Duration
}

// acquired is one partition's acquisition: the ranges acquired and the whole fetched
// batches holding them (Kafka answers whole batches; the client keeps the acquired
// offsets).
type acquired struct {
	ranges  []share.AcquiredRecords
	records []byte
}

// acquire reads the replica's committed log from the share partition's next fetch
// offset and acquires what it can for the member (Kafka's SharePartition.acquire over
// a log read): up to the high watermark, or the last stable offset under
// read_committed with the aborted transactions archived; the change (delivery counts,
// archived records, a moved start offset) is written before the records are answered.
func (m *Manager) acquire(ctx context.Context, key share.Key, ap acquireParams) (acquired, error) {
	sp, err := m.partition(ctx, key, ap.loadWait)
	if err != nil {
		return acquired{}, err
	}
	var offset int64
	var can bool
	readCommitted := ap.readCommitted
	if _, err := sp.use(func(p *share.Partition) *pendingWrite {
		offset, can = p.NextFetchOffset(), p.CanAcquire()
		return nil
	}); err != nil || !can {
		return acquired{}, err
	}
	if logStart := sp.replica.State().LogStartOffset; offset < logStart {
		// Retention or DeleteRecords removed records the share partition had not
		// finished: they are gone for every member.
		w, err := sp.use(func(p *share.Partition) *pendingWrite {
			w := sp.enqueueLocked(p.AdvanceLogStartOffset(logStart))
			offset = p.NextFetchOffset()
			return w
		})
		if err != nil {
			return acquired{}, err
		}
		if err := sp.flush(ctx, w); err != nil {
			return acquired{}, err
		}
	}
	res, err := sp.replica.ReadIsolated(offset, max(ap.maxBytes, 1), sp.leaderEpoch, replication.LeaderOnly, readCommitted)
	if errors.Is(err, replication.ErrOffsetMovedToTieredStorage) {
		// Below the local log start: read from remote storage as a consumer's fetch is
		// (Kafka never answers OFFSET_MOVED_TO_TIERED_STORAGE to a client).
		res.Records, res.Aborted, err = nil, nil, nil
		if m.cfg.RemoteRead == nil {
			return acquired{}, nil
		}
		if res.Records, res.Aborted, err = m.cfg.RemoteRead(ctx, sp.replica, offset, max(ap.maxBytes, 1), readCommitted); err != nil {
			return acquired{}, err
		}
	}
	switch {
	case errors.Is(err, replication.ErrOffsetOutOfRange):
		return acquired{}, nil // a log start move raced the read: the next fetch moves on
	case errors.Is(err, replication.ErrNotLeader), errors.Is(err, replication.ErrFencedLeaderEpoch),
		errors.Is(err, replication.ErrUnknownLeaderEpoch), errors.Is(err, replication.ErrPartitionStopped):
		m.forget(sp)
		return acquired{}, fmt.Errorf("%w: %w", ErrNotLeader, err)
	case err != nil:
		return acquired{}, err
	}
	batches, spans := fetchedBatches(res.Records)
	if len(batches) == 0 {
		return acquired{}, nil
	}
	req := share.AcquireRequest{MemberID: ap.memberID, FetchOffset: offset, Batches: batches,
		MaxRecords: ap.maxRecords, BatchSize: ap.batchSize, Mode: ap.mode, ReadCommitted: readCommitted}
	for _, a := range res.Aborted {
		req.AbortedTransactions = append(req.AbortedTransactions, share.AbortedTransaction{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset})
	}
	var out []share.AcquiredRecords
	w, err := sp.use(func(p *share.Partition) *pendingWrite {
		var c share.Change
		out, c = p.Acquire(m.nowMs(), req)
		m.metrics.acquired(key.GroupID, out)
		return sp.enqueueLocked(c)
	})
	if err != nil {
		return acquired{}, err
	}
	if err := sp.flush(ctx, w); err != nil {
		return acquired{}, err
	}
	return acquired{ranges: out, records: batchesHolding(res.Records, batches, spans, out)}, nil
}

// fetchedBatches lists the record batches of a log read, with each one's byte span.
func fetchedBatches(records []byte) ([]share.FetchedBatch, [][2]int) {
	var out []share.FetchedBatch
	var spans [][2]int
	for pos := 0; pos < len(records); {
		h, err := segment.ParseBatchHeader(records[pos:])
		if err != nil || int(h.Size()) > len(records)-pos {
			break // a partial batch at the end of the read
		}
		out = append(out, share.FetchedBatch{BaseOffset: h.BaseOffset, LastOffset: h.LastOffset(),
			ProducerID: h.ProducerID, Transactional: h.Transactional(), Control: h.Control()})
		spans = append(spans, [2]int{pos, pos + int(h.Size())})
		pos += int(h.Size())
	}
	return out, spans
}

// batchesHolding returns the bytes of the batches that hold an acquired offset.
func batchesHolding(records []byte, batches []share.FetchedBatch, spans [][2]int, ranges []share.AcquiredRecords) []byte {
	var out []byte
	for i, b := range batches {
		for _, r := range ranges {
			if r.FirstOffset <= b.LastOffset && r.LastOffset >= b.BaseOffset {
				out = append(out, records[spans[i][0]:spans[i][1]]...)
				break
			}
		}
	}
	return out
}

// acknowledge applies a member's acknowledgements to one share partition and writes
// the change; it returns once the share coordinator has it (Kafka answers an
// acknowledgement after the write completes), so an ACCEPT answered is never
// redelivered, even by a new leader.
func (m *Manager) acknowledge(ctx context.Context, key share.Key, memberID string, batches []share.AcknowledgementBatch) error {
	sp, err := m.partition(ctx, key, 0)
	if err != nil {
		return err
	}
	var ackErr error
	w, err := sp.use(func(p *share.Partition) *pendingWrite {
		var c share.Change
		c, ackErr = p.Acknowledge(m.nowMs(), memberID, batches)
		return sp.enqueueLocked(c)
	})
	if err != nil {
		return err
	}
	if ackErr != nil {
		return ackErr
	}
	if err := sp.flush(ctx, w); err != nil {
		return err
	}
	if w != nil {
		// A RELEASE makes records Available; an ACCEPT or REJECT may move the start
		// offset and make room under group.share.partition.max.record.locks.
		m.notifyAvailable()
	}
	return nil
}

// releaseMember makes every record the member holds in the loaded share partitions
// of parts Available again (its share session closed, its connection went away) and
// writes the changes.
func (m *Manager) releaseMember(ctx context.Context, group, memberID string, parts []TopicPartition) {
	m.release(ctx, group, memberID, parts, func(_ TopicPartition, p *share.Partition) share.Change {
		return p.ReleaseMember(memberID)
	})
}

// releaseAcquired makes the ranges one fetch acquired for the member Available again
// (its share session closed while the fetch acquired them), and nothing else the
// member holds: a newer session of the member keeps its records.
func (m *Manager) releaseAcquired(ctx context.Context, group, memberID string, acquired map[TopicPartition][]share.AcquiredRecords) {
	parts := make([]TopicPartition, 0, len(acquired))
	for tp := range acquired {
		parts = append(parts, tp)
	}
	m.release(ctx, group, memberID, parts, func(tp TopicPartition, p *share.Partition) share.Change {
		return p.ReleaseMemberRecords(memberID, acquired[tp])
	})
}

// release applies changeOf to the loaded share partitions of parts and writes the
// changes; parked fetches try again.
func (m *Manager) release(ctx context.Context, group, memberID string, parts []TopicPartition, changeOf func(TopicPartition, *share.Partition) share.Change) {
	released := false
	for _, tp := range parts {
		m.mu.Lock()
		sp := m.partitions[keyOf(group, tp)]
		m.mu.Unlock()
		if sp == nil {
			continue
		}
		select {
		case <-sp.loaded:
		case <-ctx.Done():
			return
		}
		w, err := sp.use(func(p *share.Partition) *pendingWrite {
			return sp.enqueueLocked(changeOf(tp, p))
		})
		if err != nil || w == nil {
			continue
		}
		released = true
		if err := sp.flush(ctx, w); err != nil {
			m.log.Log(stateLogLevel(err), "releasing a member's records", "group", group, "member", memberID, "error", err)
		}
	}
	if released {
		m.notifyAvailable()
	}
}
