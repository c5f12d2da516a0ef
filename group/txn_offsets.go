package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Transactional offset commits (TxnOffsetCommit, key 28, v0-3). The offsets of a
// transaction are held per producer id, invisible to OffsetFetch (requireStable gets
// UNSTABLE_OFFSET_COMMIT for them), until the transaction's marker reaches this
// partition: CompleteTransaction writes them as ordinary offset commits on COMMIT and
// drops them on ABORT.
//
// Petrel keeps them in memory only (Kafka writes them at once, in a transactional
// batch): a coordinator failover between TxnOffsetCommit and the marker loses them, and
// the committed transaction's offsets are then not applied (the consumer re-reads).

// TxnOffsetCommit stages one transactional offset commit. From v3 (KIP-447) a request
// naming a member or generation is checked against the group as OffsetCommit is.
func (s *Shard) TxnOffsetCommit(now time.Time, req *kmsg.TxnOffsetCommitRequest, resp *kmsg.TxnOffsetCommitResponse, send func(kmsg.Response)) Effects {
	s.observe(now)
	var b batch
	answer := func(code func(topic string, p kmsg.TxnOffsetCommitRequestTopicPartition) int16) Effects {
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
		return b.effects()
	}
	check := kmsg.NewOffsetCommitRequest()
	check.Version, check.Group, check.Generation, check.MemberID, check.InstanceID = 9, req.Group, -1, "", nil
	if req.Version >= 3 {
		check.Generation, check.MemberID, check.InstanceID = req.Generation, req.MemberID, req.InstanceID
	}
	if code := s.validateOffsetCommit(now, &check); code != 0 {
		return answer(func(string, kmsg.TxnOffsetCommitRequestTopicPartition) int16 { return code })
	}
	g := s.groups[req.Group]
	byGroup := s.txnOffsets[req.ProducerID]
	if byGroup == nil {
		byGroup = map[string]map[topicPartition]offsetValue{}
		s.txnOffsets[req.ProducerID] = byGroup
	}
	staged := byGroup[req.Group]
	if staged == nil {
		staged = map[topicPartition]offsetValue{}
		byGroup[req.Group] = staged
	}
	return answer(func(topic string, p kmsg.TxnOffsetCommitRequestTopicPartition) int16 {
		if p.Metadata != nil && len(*p.Metadata) > s.cfg.OffsetMetadataMaxBytes {
			return errOffsetMetadataTooLarge
		}
		v := offsetValue{offset: p.Offset, leaderEpoch: -1, commitTimestampMs: now.UnixMilli(), expireTimestampMs: -1}
		if req.Version >= 2 {
			v.leaderEpoch = p.LeaderEpoch
		}
		if p.Metadata != nil {
			v.metadata = *p.Metadata
		}
		tp := topicPartition{topic, p.Partition}
		if _, ok := staged[tp]; !ok {
			g.pendingOffsets[tp]++
		}
		staged[tp] = v
		return 0
	})
}

// CompleteTransaction applies (commit) or drops (abort) the offsets producerID staged in
// this partition's groups; done gets the outcome once the offsets are written.
func (s *Shard) CompleteTransaction(now time.Time, producerID int64, commit bool, done func(code int16)) Effects {
	s.observe(now)
	byGroup := s.txnOffsets[producerID]
	delete(s.txnOffsets, producerID)
	release := func(g *group, tp topicPartition) {
		if g.pendingOffsets[tp]--; g.pendingOffsets[tp] <= 0 {
			delete(g.pendingOffsets, tp)
		}
	}
	var records []Record
	type applied struct {
		g  *group
		tp topicPartition
		v  offsetValue
	}
	var writes []applied
	for id, staged := range byGroup {
		g := s.groups[id]
		if g == nil {
			continue
		}
		for tp, v := range staged {
			if !commit {
				release(g, tp)
				continue
			}
			writes = append(writes, applied{g, tp, v})
			records = append(records, offsetCommitRecord(id, tp, v))
		}
	}
	if len(records) == 0 {
		done(0)
		return Effects{}
	}
	var b batch
	epoch := s.epoch
	b.write(func(code int16) Effects {
		if s.epoch == epoch {
			for _, w := range writes {
				release(w.g, w.tp)
				if code == 0 {
					w.g.offsets[w.tp] = w.v
				}
			}
		}
		done(code)
		return Effects{}
	}, records...)
	return b.effects()
}
