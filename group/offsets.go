package group

import (
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// offsetCommit is OffsetCommit for one group (Kafka's OffsetMetadataManager.commitOffset):
// the offsets are written, and visible to OffsetFetch once the write is committed.
func (s *Shard) offsetCommit(now time.Time, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, send func(kmsg.Response)) Effects {
	var b batch
	resp.Version = req.Version
	_, existed := s.groups[req.Group]
	if code := s.validateOffsetCommit(now, req, false); code != 0 {
		for _, t := range req.Topics {
			ti := commitTopic(resp, t.Topic)
			for _, p := range t.Partitions {
				resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, commitPartition(p.Partition, code))
			}
		}
		b.reply(send, resp)
		return b.effects()
	}
	g := s.groups[req.Group]
	if g.is(stateStable) || g.is(statePreparingRebalance) {
		s.rescheduleHeartbeat(now, &b, g, g.members[req.MemberID])
	}
	expire := int64(-1)
	if req.Version >= 2 && req.Version <= 4 && req.RetentionTimeMillis != -1 {
		expire = now.UnixMilli() + req.RetentionTimeMillis
	}
	// written names each partition being written and where its answer is in resp (by
	// index: the slices may grow while the response is built).
	type written struct {
		tp                    topicPartition
		value                 offsetValue
		topicIndex, partIndex int
	}
	var writes []written
	var records []Record
	for _, t := range req.Topics {
		ti := commitTopic(resp, t.Topic)
		for _, p := range t.Partitions {
			rt := &resp.Topics[ti]
			if p.Metadata != nil && (len(*p.Metadata) > s.cfg.OffsetMetadataMaxBytes || !fitsRecord(*p.Metadata)) {
				rt.Partitions = append(rt.Partitions, commitPartition(p.Partition, errOffsetMetadataTooLarge))
				continue
			}
			if !fitsRecord(t.Topic) { // flexible OffsetCommit v8+; never stored cut
				rt.Partitions = append(rt.Partitions, commitPartition(p.Partition, errInvalidRequest))
				continue
			}
			v := offsetValue{offset: p.Offset, leaderEpoch: -1, commitTimestampMs: now.UnixMilli(), expireTimestampMs: expire}
			if req.Version >= 6 {
				v.leaderEpoch = p.LeaderEpoch
			}
			if p.Metadata != nil {
				v.metadata = *p.Metadata
			}
			if req.Version == 1 && p.Timestamp != -1 {
				v.commitTimestampMs = p.Timestamp
			}
			v.recordOffset = s.nextPosition()
			rt.Partitions = append(rt.Partitions, commitPartition(p.Partition, 0))
			tp := topicPartition{t.Topic, p.Partition}
			writes = append(writes, written{tp: tp, value: v, topicIndex: ti, partIndex: len(rt.Partitions) - 1})
			records = append(records, offsetCommitRecord(req.Group, tp, v))
			g.pendingOffsets[tp]++
		}
	}
	b.reply(send, resp)
	// A simple consumer's group created here is forgotten again when nothing of it is
	// committed (Kafka reverts it with the failed write).
	dropIfUnused := func() {
		if !existed && s.groups[g.id] == g && g.is(stateEmpty) && len(g.members) == 0 && len(g.pending) == 0 &&
			len(g.offsets) == 0 && len(g.pendingOffsets) == 0 {
			delete(s.groups, g.id)
		}
	}
	if len(records) == 0 {
		dropIfUnused()
	} else {
		epoch := s.epoch
		answered := false // by the timeout: the response is sent, leave it alone
		answer := func(code int16) {
			for _, w := range writes {
				resp.Topics[w.topicIndex].Partitions[w.partIndex].ErrorCode = code
			}
		}
		b.writeAnswered(func(code int16) Effects {
			defer func() {
				if s.epoch == epoch {
					dropIfUnused()
				}
			}()
			if code != 0 && !answered {
				answer(code)
			}
			if s.epoch != epoch {
				return Effects{}
			}
			// Applied once committed, also after a timeout: the offsets a load replays.
			for _, w := range writes {
				if g.pendingOffsets[w.tp]--; g.pendingOffsets[w.tp] <= 0 {
					delete(g.pendingOffsets, w.tp)
				}
				if code == 0 {
					g.offsets[w.tp] = w.value
				}
			}
			return Effects{}
		}, func(code int16) Effects {
			answered = true
			answer(code)
			return Effects{}
		}, records...)
	}
	return b.effects()
}

// commitTopic returns the index of resp's topic named topic, appending it when absent.
func commitTopic(resp *kmsg.OffsetCommitResponse, topic string) int {
	for i := range resp.Topics {
		if resp.Topics[i].Topic == topic {
			return i
		}
	}
	t := kmsg.NewOffsetCommitResponseTopic()
	t.Topic = topic
	resp.Topics = append(resp.Topics, t)
	return len(resp.Topics) - 1
}

func commitPartition(partition int32, code int16) kmsg.OffsetCommitResponseTopicPartition {
	p := kmsg.NewOffsetCommitResponseTopicPartition()
	p.Partition = partition
	p.ErrorCode = code
	return p
}

// validateOffsetCommit is Kafka's validateOffsetCommit and ClassicGroup.validateOffsetCommit
// (a consumer group's: validateConsumerOffsetCommit) for an OffsetCommit (transactional
// false) or a TxnOffsetCommit (true, req carrying its group and member fields); a
// simple consumer's first commit creates its (Empty, protocol-less) group, and a
// consumer group's first the holder of its offsets. A transactional commit naming no
// member, generation or
// instance is accepted whatever the group's state (older TxnOffsetCommit versions
// carry none: Kafka exempts them from the members-only rule), and a transactional
// commit is never refused for CompletingRebalance; a named generation of a group that
// does not exist is ILLEGAL_GENERATION to it (OffsetMetadataManager's
// validateTransactionalOffsetCommit), GROUP_ID_NOT_FOUND to OffsetCommit v9+.
func (s *Shard) validateOffsetCommit(now time.Time, req *kmsg.OffsetCommitRequest, transactional bool) int16 {
	if !validGroupID(req.Group) {
		return errInvalidGroupID
	}
	if s.shareGroups[req.Group] != nil { // share groups commit no offsets here
		return errGroupIDNotFound
	}
	if cg := s.consumerGroups[req.Group]; cg != nil {
		code := validateConsumerOffsetCommit(cg, req, transactional)
		if code == 0 && s.groups[req.Group] == nil {
			s.groups[req.Group] = newGroup(req.Group, now) // the holder of its offsets
		}
		return code
	}
	generation := req.Generation
	if req.Version == 0 {
		generation = -1
	}
	g := s.groups[req.Group]
	if g == nil {
		if generation < 0 {
			g = newGroup(req.Group, now)
			s.groups[req.Group] = g
		} else if req.Version >= 9 && !transactional {
			return errGroupIDNotFound
		} else {
			return errIllegalGeneration
		}
	}
	if g.is(stateDead) {
		return errCoordinatorNotAvailable
	}
	if generation < 0 && g.is(stateEmpty) {
		return 0
	}
	if generation >= 0 || req.MemberID != "" || req.InstanceID != nil {
		if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
			return code
		}
		if generation != g.generation {
			return errIllegalGeneration
		}
	} else if !transactional && !g.is(stateEmpty) {
		return errUnknownMemberID
	}
	if !transactional && g.is(stateCompletingRebalance) {
		return errRebalanceInProgress
	}
	return 0
}

// offsetFetch answers one group's OffsetFetch from the committed offsets.
func (s *Shard) offsetFetch(groupID string, topics []kmsg.OffsetFetchRequestTopic, requireStable bool) kmsg.OffsetFetchResponseGroup {
	out := kmsg.NewOffsetFetchResponseGroup()
	out.Group = groupID
	g := s.groups[groupID]
	if topics == nil {
		if g == nil {
			return out
		}
		byTopic := map[string][]int32{}
		for tp := range g.offsets {
			byTopic[tp.topic] = append(byTopic[tp.topic], tp.partition)
		}
		names := make([]string, 0, len(byTopic))
		for name := range byTopic {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			ps := byTopic[name]
			sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
			topics = append(topics, kmsg.OffsetFetchRequestTopic{Topic: name, Partitions: ps})
		}
	}
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition = p
			rp.Offset, rp.LeaderEpoch = -1, -1
			empty := ""
			rp.Metadata = &empty
			tp := topicPartition{t.Topic, p}
			if g != nil {
				if requireStable && g.pendingOffsets[tp] > 0 {
					rp.ErrorCode = errUnstableOffsetCommit
				} else if v, ok := g.offsets[tp]; ok {
					rp.Offset, rp.LeaderEpoch = v.offset, v.leaderEpoch
					md := v.metadata
					rp.Metadata = &md
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		out.Topics = append(out.Topics, rt)
	}
	return out
}

// offsetDelete is OffsetDelete (Kafka's OffsetMetadataManager.deleteOffsets): partitions
// of subscribed topics get GROUP_SUBSCRIBED_TO_TOPIC (a consumer group's: topics a
// member subscribes to, whatever its state); only partitions with an offset are
// answered, as Kafka.
func (s *Shard) offsetDelete(now time.Time, req *kmsg.OffsetDeleteRequest, send func(kmsg.Response)) Effects {
	var b batch
	resp := kmsg.NewPtrOffsetDeleteResponse()
	resp.Version = req.Version
	g := s.groups[req.Group]
	cg := s.consumerGroups[req.Group]
	if cg != nil && g == nil {
		g = newGroup(req.Group, now) // no offsets: nothing to delete
	}
	switch {
	case req.Group == "":
		resp.ErrorCode = errInvalidGroupID
	case g == nil || g.is(stateDead):
		resp.ErrorCode = errGroupIDNotFound
	case !g.is(stateEmpty) && g.protocolType != consumerProtocolType:
		resp.ErrorCode = errNonEmptyGroup
	}
	if resp.ErrorCode != 0 {
		b.reply(send, resp)
		return b.effects()
	}
	var deleted []topicPartition
	var records []Record
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		subscribed := g.isSubscribedToTopic(t.Topic)
		if cg != nil {
			subscribed = cg.IsSubscribedToTopic(t.Topic)
		}
		for _, p := range t.Partitions {
			tp := topicPartition{t.Topic, p.Partition}
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			if subscribed {
				rp.ErrorCode = errGroupSubscribedToTopic
			} else if _, ok := g.offsets[tp]; ok {
				deleted = append(deleted, tp)
				records = append(records, offsetCommitTombstone(g.id, tp))
			} else {
				continue
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	b.reply(send, resp)
	if len(records) > 0 {
		epoch := s.epoch
		answered := false
		b.writeAnswered(func(code int16) Effects {
			if code != 0 {
				if !answered {
					resp.ErrorCode = code
				}
				return Effects{}
			}
			if s.epoch == epoch {
				for _, tp := range deleted {
					delete(g.offsets, tp)
				}
			}
			return Effects{}
		}, func(code int16) Effects {
			answered = true
			resp.ErrorCode = code
			return Effects{}
		}, records...)
	}
	return b.effects()
}

// expireOffsets removes offsets past retention (Kafka's cleanupExpiredOffsets) and Empty
// groups left without offsets (cleanupGroupMetadata); the consumer groups' offsets
// expire by their own rule (expireConsumerOffsets).
func (s *Shard) expireOffsets(now time.Time) Effects {
	var b batch
	ids := make([]string, 0, len(s.groups))
	for id := range s.groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		g := s.groups[id]
		if s.consumerGroups[id] != nil {
			continue // the holder of a consumer group's offsets
		}
		var expired []topicPartition
		allExpired := len(g.offsets) == 0
		if base, ok := expirationBase(g); ok {
			expired, allExpired = g.expiredOffsets(now, s.cfg.OffsetsRetention, base, g.isSubscribedToTopic)
		}
		var records []Record
		for _, tp := range expired {
			records = append(records, offsetCommitTombstone(g.id, tp))
		}
		deleteGroup := allExpired && g.is(stateEmpty) && len(g.pendingOffsets) == 0
		if deleteGroup {
			records = append(records, groupMetadataTombstone(g.id))
		}
		if len(records) == 0 {
			continue
		}
		s.writeDeletion(&b, g, expired, deleteGroup, nil, records)
	}
	s.expireConsumerOffsets(now, &b)
	return b.effects()
}

// expiredOffsets returns g's offsets past retention at now, sorted, counting from base
// (or at their expire timestamp), skipping the topics subscribed says are subscribed
// and partitions with a commit being written; allExpired is whether no offset is left
// after them.
func (g *group) expiredOffsets(now time.Time, retention time.Duration, base func(offsetValue) int64,
	subscribed func(topic string) bool) (expired []topicPartition, allExpired bool) {
	nowMs, retentionMs := now.UnixMilli(), retention.Milliseconds()
	allExpired = true
	for tp, v := range g.offsets {
		if subscribed(tp.topic) || g.pendingOffsets[tp] > 0 {
			allExpired = false
			continue
		}
		var isExpired bool
		if v.expireTimestampMs >= 0 {
			isExpired = nowMs >= v.expireTimestampMs
		} else {
			isExpired = nowMs-base(v) >= retentionMs
		}
		if isExpired {
			expired = append(expired, tp)
		} else {
			allExpired = false
		}
	}
	sort.Slice(expired, func(i, j int) bool {
		if expired[i].topic != expired[j].topic {
			return expired[i].topic < expired[j].topic
		}
		return expired[i].partition < expired[j].partition
	})
	return expired, allExpired
}

// expirationBase is Kafka's ClassicGroup.offsetExpirationCondition: from when an Empty
// group became empty (or the commit, without that timestamp), from the commit for a
// simple consumer's group or a Stable consumer group that knows its subscriptions.
func expirationBase(g *group) (func(offsetValue) int64, bool) {
	fromCommit := func(v offsetValue) int64 { return v.commitTimestampMs }
	if g.protocolType == "" {
		return fromCommit, true
	}
	if g.is(stateEmpty) {
		return func(v offsetValue) int64 {
			if g.stateTimestampMs >= 0 {
				return g.stateTimestampMs
			}
			return v.commitTimestampMs
		}, true
	}
	if g.protocolType == consumerProtocolType && g.subscribedKnown && g.is(stateStable) {
		return fromCommit, true
	}
	return nil, false
}

// writeDeletion writes records (tombstones) whose callback, once they are committed,
// forgets the deleted offsets and, with deleteGroup, the group if it is still Empty;
// done (if set) gets the answer, at the timeout if the write is not committed by then.
// Writes complete in append order (a late one too), so every commit appended before the
// tombstones has been applied when it runs and every later one is applied after it:
// deleting unconditionally makes memory what the log replays.
func (s *Shard) writeDeletion(b *batch, g *group, tps []topicPartition, deleteGroup bool, done func(code int16), records []Record) {
	epoch := s.epoch
	answered := false
	b.writeAnswered(func(code int16) Effects {
		if s.epoch == epoch && code == 0 {
			for _, tp := range tps {
				delete(g.offsets, tp)
				s.dropTxnOffsetsOf(g.id, tp)
			}
			if deleteGroup && g.is(stateEmpty) && len(g.members) == 0 && s.groups[g.id] == g {
				if len(g.offsets) == 0 && len(g.pendingOffsets) == 0 {
					delete(s.groups, g.id)
				} else {
					g.protocolType, g.protocol, g.leader, g.generation = "", "", "", 0
				}
			}
		}
		if done != nil && !answered {
			done(code)
		}
		return Effects{}
	}, func(code int16) Effects {
		answered = true
		if done != nil {
			done(code)
		}
		return Effects{}
	}, records...)
}
