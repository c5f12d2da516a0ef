package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Transactional offset commits (TxnOffsetCommit, key 28, v0-3), stored as Kafka stores
// them (OffsetMetadataManager): the offsets are written at once, as ordinary
// offset-commit records in one transactional batch of the transaction's producer
// (Effects.Producer), and answered once that batch is committed. Until the producer's
// transaction marker reaches this partition they are pending per producer id,
// invisible to OffsetFetch (requireStable gets UNSTABLE_OFFSET_COMMIT for them); the
// COMMIT marker materialises them and ABORT drops them (ReplayMarker).
//
// The live path and a load give the same state: ReplayRecord stages a transactional
// record exactly as TxnOffsetCommit does, and a marker, written by the runtime or read
// while loading, always goes through ReplayMarker. A committed transactional offset
// replaces the partition's committed offset only if its record is later in the log
// than that offset's record (an ordinary OffsetCommit written after the
// TxnOffsetCommit wins); a tombstone of the partition (DeleteGroups, OffsetDelete,
// expiry) drops the pending offsets too.

// TxnOffsetCommit writes one transactional offset commit. As in Kafka, a request naming
// no member, generation or instance (v0-2 carry none; v3 with generation -1 and an
// empty member id: Java's sendOffsetsToTransaction(offsets, groupId)) is accepted
// whatever the group's members; from v3 (KIP-447) a request naming a member or
// generation is checked against the group as OffsetCommit is, except that
// CompletingRebalance does not refuse it (validateOffsetCommit).
func (s *Shard) TxnOffsetCommit(now time.Time, req *kmsg.TxnOffsetCommitRequest, resp *kmsg.TxnOffsetCommitResponse, send func(kmsg.Response)) Effects {
	s.observe(now)
	var b batch
	answer := func(code func(topic string, p kmsg.TxnOffsetCommitRequestTopicPartition) int16) {
		for _, t := range req.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code(t.Topic, p)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		b.reply(send, resp)
	}
	check := kmsg.NewOffsetCommitRequest()
	check.Version, check.Group, check.Generation, check.MemberID, check.InstanceID = 9, req.Group, -1, "", nil
	if req.Version >= 3 {
		check.Generation, check.MemberID, check.InstanceID = req.Generation, req.MemberID, req.InstanceID
	}
	if code := s.validateOffsetCommit(now, &check, true); code != 0 {
		answer(func(string, kmsg.TxnOffsetCommitRequestTopicPartition) int16 { return code })
		return b.effects()
	}
	type staged struct {
		tp       topicPartition
		value    offsetValue
		previous *offsetValue // the producer's pending offset it replaced
	}
	var written []staged
	var records []Record
	answer(func(topic string, p kmsg.TxnOffsetCommitRequestTopicPartition) int16 {
		if p.Metadata != nil && (len(*p.Metadata) > s.cfg.OffsetMetadataMaxBytes || !fitsRecord(*p.Metadata)) {
			return errOffsetMetadataTooLarge
		}
		if !fitsRecord(topic) {
			return errInvalidRequest
		}
		v := offsetValue{offset: p.Offset, leaderEpoch: -1, commitTimestampMs: now.UnixMilli(), expireTimestampMs: -1}
		if req.Version >= 2 {
			v.leaderEpoch = p.LeaderEpoch
		}
		if p.Metadata != nil {
			v.metadata = *p.Metadata
		}
		tp := topicPartition{topic, p.Partition}
		v.recordOffset = s.nextPosition()
		w := staged{tp: tp, value: v}
		if prev, ok := s.txnOffsets[req.ProducerID][req.Group][tp]; ok {
			w.previous = &prev
		}
		s.stageTxnOffset(req.ProducerID, req.Group, tp, v)
		written = append(written, w)
		records = append(records, offsetCommitRecord(req.Group, tp, v))
		return 0
	})
	if len(records) == 0 {
		return b.effects()
	}
	epoch := s.epoch
	answered := false // by the timeout: the response is sent, leave it alone
	fail := func(code int16) {
		for ti := range resp.Topics {
			for pi := range resp.Topics[ti].Partitions {
				if rp := &resp.Topics[ti].Partitions[pi]; rp.ErrorCode == 0 {
					rp.ErrorCode = code
				}
			}
		}
	}
	b.writeAnswered(func(code int16) Effects {
		if code == 0 {
			return Effects{} // staged already; a late one too, as a load stages it
		}
		if !answered {
			fail(code)
		}
		if s.epoch == epoch {
			// The batch is not in the log: undo what it staged (unless replaced since),
			// in reverse order.
			for i := len(written) - 1; i >= 0; i-- {
				w := written[i]
				s.unstageTxnOffset(req.ProducerID, req.Group, w.tp, w.value.recordOffset, w.previous)
			}
		}
		return Effects{}
	}, func(code int16) Effects {
		answered = true
		fail(code)
		return Effects{}
	}, records...)
	b.producer = &Producer{ID: req.ProducerID, Epoch: req.ProducerEpoch}
	return b.effects()
}

// nextPosition is the log position of the next offset-commit record written live: it
// orders records as the log does (replayed records hold their offsets, later writes
// follow them).
func (s *Shard) nextPosition() int64 {
	s.position++
	return s.position
}

// stageTxnOffset makes v producerID's pending offset of groupID's tp, creating a simple
// consumer's group when there is none (as Kafka's replay does).
func (s *Shard) stageTxnOffset(producerID int64, groupID string, tp topicPartition, v offsetValue) {
	g := s.groups[groupID]
	if g == nil {
		g = newGroup(groupID, time.UnixMilli(v.commitTimestampMs))
		g.stateTimestampMs = -1
		s.groups[groupID] = g
	}
	byGroup := s.txnOffsets[producerID]
	if byGroup == nil {
		byGroup = map[string]map[topicPartition]offsetValue{}
		s.txnOffsets[producerID] = byGroup
	}
	pending := byGroup[groupID]
	if pending == nil {
		pending = map[topicPartition]offsetValue{}
		byGroup[groupID] = pending
	}
	if _, ok := pending[tp]; !ok {
		g.pendingOffsets[tp]++
	}
	pending[tp] = v
}

// unstageTxnOffset undoes a failed write's staging of producerID's pending offset of
// groupID's tp, if its record (at position) is still the pending one: the offset it
// replaced (previous) is pending again, or none.
func (s *Shard) unstageTxnOffset(producerID int64, groupID string, tp topicPartition, position int64, previous *offsetValue) {
	pending := s.txnOffsets[producerID][groupID]
	if v, ok := pending[tp]; !ok || v.recordOffset != position {
		return
	}
	if previous != nil {
		pending[tp] = *previous
		return
	}
	s.dropTxnOffset(producerID, groupID, tp)
}

// dropTxnOffset forgets producerID's pending offset of groupID's tp.
func (s *Shard) dropTxnOffset(producerID int64, groupID string, tp topicPartition) {
	byGroup := s.txnOffsets[producerID]
	pending := byGroup[groupID]
	if _, ok := pending[tp]; !ok {
		return
	}
	delete(pending, tp)
	if len(pending) == 0 {
		delete(byGroup, groupID)
	}
	if len(byGroup) == 0 {
		delete(s.txnOffsets, producerID)
	}
	if g := s.groups[groupID]; g != nil {
		if g.pendingOffsets[tp]--; g.pendingOffsets[tp] <= 0 {
			delete(g.pendingOffsets, tp)
		}
	}
}

// dropTxnOffsetsOf forgets every producer's pending offset of groupID's tp: a
// tombstone of the partition was written or replayed.
func (s *Shard) dropTxnOffsetsOf(groupID string, tp topicPartition) {
	for producerID, byGroup := range s.txnOffsets {
		if _, ok := byGroup[groupID][tp]; ok {
			s.dropTxnOffset(producerID, groupID, tp)
		}
	}
}

// ReplayMarker applies producerID's transaction marker (Kafka's
// replayEndTransactionMarker): COMMIT materialises the producer's pending offsets, each
// unless the partition's committed offset has a later record; ABORT drops them. The
// runtime calls it for markers read while loading and for markers it wrote, once
// committed.
func (s *Shard) ReplayMarker(producerID int64, commit bool) {
	byGroup := s.txnOffsets[producerID]
	for groupID, pending := range byGroup {
		for tp, v := range pending {
			s.dropTxnOffset(producerID, groupID, tp)
			if !commit {
				continue
			}
			g := s.groups[groupID]
			if g == nil {
				g = newGroup(groupID, time.UnixMilli(v.commitTimestampMs))
				g.stateTimestampMs = -1
				s.groups[groupID] = g
			}
			if cur, ok := g.offsets[tp]; !ok || cur.recordOffset < v.recordOffset {
				g.offsets[tp] = v
			}
		}
	}
	delete(s.txnOffsets, producerID)
}
