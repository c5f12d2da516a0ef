package group

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// replay applies one record of the partition at offset, of a batch of producerID
// (Kafka's GroupMetadataManager.replay and OffsetMetadataManager.replay). Key types this
// build does not handle are skipped.
func (s *Shard) replay(offset, producerID int64, transactional bool, key, value []byte) error {
	s.position = max(s.position, offset)
	if rec, ok, err := DecodeShareGroupRecord(key, value); ok || err != nil {
		if err != nil {
			return err
		}
		return s.replayShare(rec)
	}
	if rec, ok, err := DecodeConsumerGroupRecord(key, value); ok || err != nil {
		if err != nil {
			return err
		}
		return s.replayConsumer(rec)
	}
	k, known, err := decodeKey(key)
	if err != nil || !known {
		return err
	}
	switch k.keyType {
	case keyTypeGroupMetadata:
		if _, ok := s.consumerGroups[k.group]; (ok || s.shareGroups[k.group] != nil) && value != nil {
			// Kafka 4.2: IllegalStateException "Group g is not a classic group."
			return fmt.Errorf("group %q is a consumer group: classic group metadata record skipped", k.group)
		}
		return s.replayGroupMetadata(k.group, value)
	default:
		if !transactional {
			producerID = -1
		}
		return s.replayOffsetCommit(offset, producerID, k.group, k.tp, value)
	}
}

// replayOffsetCommit applies an offset commit record: a tombstone deletes the
// partition's offset and every pending transactional offset of it; a transactional
// record (producerID >= 0) is staged until its producer's marker.
func (s *Shard) replayOffsetCommit(offset, producerID int64, groupID string, tp topicPartition, value []byte) error {
	g := s.groups[groupID]
	if value == nil {
		if g != nil {
			delete(g.offsets, tp)
		}
		s.dropTxnOffsetsOf(groupID, tp)
		return nil
	}
	v, err := decodeOffsetCommitValue(value)
	if err != nil {
		return fmt.Errorf("group %q %s-%d: %w", groupID, tp.topic, tp.partition, err)
	}
	v.recordOffset = offset
	if producerID >= 0 {
		s.stageTxnOffset(producerID, groupID, tp, v)
		return nil
	}
	if g == nil {
		// A simple consumer's offsets: its group is an Empty group with no protocol.
		g = newGroup(groupID, time.UnixMilli(v.commitTimestampMs))
		g.stateTimestampMs = -1
		s.groups[groupID] = g
	}
	g.offsets[tp] = v
	return nil
}

func (s *Shard) replayGroupMetadata(groupID string, value []byte) error {
	old := s.groups[groupID]
	if value == nil {
		if old != nil {
			s.dropClassicState(old)
		}
		return nil
	}
	v, err := decodeGroupMetadataValue(value)
	if err != nil {
		return fmt.Errorf("group %q metadata: %w", groupID, err)
	}
	g := newGroup(groupID, time.Time{})
	g.stateTimestampMs = v.currentStateTimestamp
	g.generation = v.generation
	g.protocolType = v.protocolType
	if v.protocol != nil {
		g.protocol = *v.protocol
	}
	if old != nil {
		g.offsets, g.pendingOffsets = old.offsets, old.pendingOffsets
	}
	for _, mv := range v.members {
		rebalance := mv.rebalanceTimeout
		if rebalance == -1 {
			rebalance = mv.sessionTimeout
		}
		m := &member{
			id:                 mv.memberID,
			instanceID:         mv.groupInstanceID,
			clientID:           mv.clientID,
			clientHost:         mv.clientHost,
			rebalanceTimeoutMs: rebalance,
			sessionTimeoutMs:   mv.sessionTimeout,
			protocolType:       v.protocolType,
			protocols:          []kmsg.JoinGroupRequestProtocol{{Name: g.protocol, Metadata: mv.subscription}},
			assignment:         mv.assignment,
		}
		g.add(m)
	}
	g.protocolType = v.protocolType
	g.leader = ""
	if v.leader != nil {
		if _, ok := g.members[*v.leader]; ok {
			g.leader = *v.leader
		}
	}
	if g.leader == "" && len(g.memberOrder) > 0 {
		g.leader = g.memberOrder[0]
	}
	if len(g.members) > 0 {
		g.state, g.previousState = stateStable, stateStable
	}
	g.computeSubscribedTopics()
	s.groups[groupID] = g
	return nil
}

// loaded starts the session timers of the replayed members; a group over group.max.size
// (the setting shrank) rebalances, as Kafka.
func (s *Shard) loaded(now time.Time) Effects {
	var b batch
	for _, g := range s.consumerGroups {
		g.StartTimers(now)
	}
	for _, g := range s.shareGroups {
		g.StartTimers(now)
	}
	for _, g := range s.groups {
		for _, m := range g.all() {
			b.timer(heartbeatKey(g.id, m.id), now.Add(ms(m.sessionTimeoutMs)))
		}
		if s.cfg.MaxSize > 0 && len(g.members) > s.cfg.MaxSize {
			s.prepareRebalance(now, &b, g)
		}
	}
	return b.effects()
}

// unload answers every parked JoinGroup and SyncGroup with NOT_COORDINATOR and forgets
// the shard's state.
func (s *Shard) unload() Effects {
	var b batch
	for _, g := range s.groups {
		for _, m := range g.all() {
			completeJoin(&b, m, joinResponse(m.joinVersion, errNotCoordinator, m.id))
			completeSync(&b, m, syncResponse(m.syncVersion, errNotCoordinator))
		}
		g.transitionTo(stateDead, time.Time{})
	}
	s.groups = map[string]*group{}
	s.txnOffsets = map[int64]map[string]map[topicPartition]offsetValue{}
	s.resetConsumerGroups()
	s.resetShareGroups()
	s.epoch++
	return b.effects()
}

// PartitionFor's Java hash: s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units, in
// int32 arithmetic.
func javaStringHashCode(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

func partitionFor(groupID string, partitions int32) int32 {
	if partitions <= 0 {
		return 0
	}
	h := javaStringHashCode(groupID)
	if h == -1<<31 {
		h = 0 // Kafka's Utils.abs
	} else if h < 0 {
		h = -h
	}
	return h % partitions
}
