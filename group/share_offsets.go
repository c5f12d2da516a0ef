package group

// The share group side of the share group offsets admin APIs (KIP-932), Kafka 4.2's
// GroupMetadataManager parts of DescribeShareGroupOffsets (key 90),
// AlterShareGroupOffsets (key 91) and DeleteShareGroupOffsets (key 92): which
// partitions of a group have share state, marking partitions initializing before
// their start offsets are set, and moving topics to deleting and then forgetting them
// around a DeleteShareGroupState. The share state itself is the share coordinator's;
// the coordinator package talks to it between these steps.

import (
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// nonEmptyShareGroupMessage is Kafka's message for a share group with members.
const nonEmptyShareGroupMessage = "The group is not empty."

// shareGroupOrError returns the share group id, or the code and message Kafka
// answers when there is none: GROUP_ID_NOT_FOUND "Group g not found.", or "Group g
// is not a share group." for a classic or consumer group.
func (s *Shard) shareGroupOrError(id string) (*ShareGroup, int16, string) {
	if g := s.shareGroups[id]; g != nil {
		return g, 0, ""
	}
	if s.otherGroupType(id) {
		return nil, errGroupIDNotFound, notShareGroup(id).msg
	}
	return nil, errGroupIDNotFound, "Group " + id + " not found."
}

// InitializedSharePartitions returns the partitions of share group groupID whose
// share state is initialized (Kafka's initializedShareGroupPartitions, what a
// DescribeShareGroupOffsets of all topics describes), or GROUP_ID_NOT_FOUND with
// Kafka's message.
func (s *Shard) InitializedSharePartitions(groupID string) (parts []ShareTopicPartitions, code int16, msg string) {
	g, code, msg := s.shareGroupOrError(groupID)
	if g == nil {
		return nil, code, msg
	}
	return sortedShareTopics(g.initialized), 0, ""
}

// ShareStartOffsets is the share state AlterShareGroupOffsets asks the share
// coordinator to initialize: for each partition its new start offset, under
// StateEpoch, the group epoch the alteration bumped to (above every state epoch the
// group gave before, so the share coordinator takes it over the old state).
type ShareStartOffsets struct {
	GroupID    string
	StateEpoch int32
	Topics     []ShareTopicStartOffsets
}

// ShareTopicStartOffsets is the start offsets of partitions of one topic.
type ShareTopicStartOffsets struct {
	TopicID   [16]byte
	TopicName string
	// StartOffsets is partition → start offset.
	StartOffsets map[int32]int64
}

// Partitions returns t's partitions as ShareTopicPartitions.
func (t ShareTopicStartOffsets) Partitions() ShareTopicPartitions {
	return ShareTopicPartitions{TopicID: t.TopicID, TopicName: t.TopicName, Partitions: slices.Sorted(maps.Keys(t.StartOffsets))}
}

// AlterShareGroupOffsets is the group step of an AlterShareGroupOffsets (key 91) at
// now against the metadata image topics (Kafka's GroupMetadataManager
// .alterShareGroupOffsets): the group is created when it does not exist; a group with
// members is refused as a whole (NON_EMPTY_GROUP), as is a classic or consumer group
// (GROUP_ID_NOT_FOUND); a partition of an unknown topic or beyond its partition count
// is answered UNKNOWN_TOPIC_OR_PARTITION. The others are marked initializing, with the
// group epoch bumped (records 11 and 15). Once those records are committed, done gets
// the response so far and the start offsets to initialize (nil when there are none);
// with code, the write's error, instead when it failed. An error answered at once
// comes with a nil plan too.
func (s *Shard) AlterShareGroupOffsets(now time.Time, r *kmsg.AlterShareGroupOffsetsRequest, topics ConsumerTopics,
	done func(resp *kmsg.AlterShareGroupOffsetsResponse, plan *ShareStartOffsets, code int16)) Effects {
	s.observe(now)
	var b batch
	resp := r.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	fail := func(code int16, msg string) Effects {
		resp.ErrorCode, resp.ErrorMessage = code, kmsg.StringPtr(msg)
		done(resp, nil, 0)
		return b.effects()
	}
	if s.otherGroupType(r.GroupID) {
		return fail(errGroupIDNotFound, notShareGroup(r.GroupID).msg)
	}
	g := s.shareGroups[r.GroupID]
	if g != nil && g.NumMembers() > 0 {
		return fail(errNonEmptyGroup, nonEmptyShareGroupMessage)
	}
	plan := &ShareStartOffsets{GroupID: r.GroupID}
	for _, rt := range r.Topics {
		t, known := topics.ConsumerTopic(rt.Topic)
		st := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		st.Topic = rt.Topic
		var offsets map[int32]int64
		if known {
			st.TopicID = t.ID
			offsets = map[int32]int64{}
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			if !known || rp.Partition < 0 || rp.Partition >= t.Partitions {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				sp.ErrorMessage = kmsg.StringPtr(kerr.UnknownTopicOrPartition.Description)
			} else {
				offsets[rp.Partition] = rp.StartOffset
			}
			st.Partitions = append(st.Partitions, sp)
		}
		if i := slices.IndexFunc(plan.Topics, func(p ShareTopicStartOffsets) bool { return known && p.TopicID == t.ID }); i >= 0 {
			maps.Copy(plan.Topics[i].StartOffsets, offsets) // the topic named twice: one entry
		} else if len(offsets) > 0 {
			plan.Topics = append(plan.Topics, ShareTopicStartOffsets{TopicID: t.ID, TopicName: t.Name, StartOffsets: offsets})
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(plan.Topics) == 0 {
		done(resp, nil, 0)
		return b.effects()
	}
	if g == nil {
		g = NewShareGroup(r.GroupID, s.shareConfig(r.GroupID))
		s.shareGroups[r.GroupID] = g
	}
	plan.StateEpoch = g.groupEpoch + 1
	s.persistShare(&b, g, g.markInitializing(plan), nil, nil)
	b.writeAnsweredOnce(func(int16) {}, func(code int16) {
		if code != 0 {
			done(nil, nil, code)
			return
		}
		done(resp, plan, 0)
	})
	return b.effects()
}

// markInitializing bumps the group epoch to plan.StateEpoch and moves plan's
// partitions to the initializing ones (out of the initialized ones).
func (g *ShareGroup) markInitializing(plan *ShareStartOffsets) []ShareEvent {
	initializing, initialized := maps.Clone(g.initializing), maps.Clone(g.initialized)
	for _, t := range plan.Topics {
		parts := t.Partitions()
		if done, ok := initialized[t.TopicID]; ok {
			done.Partitions = slices.DeleteFunc(slices.Clone(done.Partitions), func(p int32) bool { return slices.Contains(parts.Partitions, p) })
			initialized[t.TopicID] = done
		}
		cur := initializing[t.TopicID]
		parts.Partitions = append(parts.Partitions, cur.Partitions...)
		initializing[t.TopicID] = parts
	}
	e := &emitter[ShareEvent]{apply: g.apply}
	e.emit(ShareGroupEpochBumped{Epoch: plan.StateEpoch, MetadataHash: g.metadataHash})
	e.emit(ShareStatePartitionsChanged{Initializing: sortedShareTopics(shareTopicMap(slices.Collect(maps.Values(initializing)))),
		Initialized: sortedShareTopics(shareTopicMap(slices.Collect(maps.Values(initialized)))), Deleting: g.deletingTopics()})
	return e.events
}

// InitiateDeleteShareGroupOffsets is the first group step of a
// DeleteShareGroupOffsets (key 92) at now against the metadata image topics (Kafka's
// GroupCoordinatorShard.initiateDeleteShareGroupOffsets): the group must be a share
// group (GROUP_ID_NOT_FOUND) without members (NON_EMPTY_GROUP); a topic unknown to the
// image, or without share state for the group, is answered UNKNOWN_TOPIC_OR_PARTITION.
// The others — initialized, or still deleting from an earlier attempt — move to the
// group's deleting topics (record 15), and done gets, once that is committed, the
// response so far and the partitions whose share state to delete (none: nil); with
// code, the write's error, instead when it failed.
func (s *Shard) InitiateDeleteShareGroupOffsets(now time.Time, r *kmsg.DeleteShareGroupOffsetsRequest, topics ConsumerTopics,
	done func(resp *kmsg.DeleteShareGroupOffsetsResponse, del []ShareTopicPartitions, code int16)) Effects {
	s.observe(now)
	var b batch
	resp := r.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	g, code, msg := s.shareGroupOrError(r.GroupID)
	if g == nil || g.NumMembers() > 0 {
		if g != nil {
			code, msg = errNonEmptyGroup, nonEmptyShareGroupMessage
		}
		resp.ErrorCode, resp.ErrorMessage = code, kmsg.StringPtr(msg)
		done(resp, nil, 0)
		return b.effects()
	}
	var del []ShareTopicPartitions
	initializing, initialized, deleting := maps.Clone(g.initializing), maps.Clone(g.initialized), maps.Clone(g.deleting)
	for _, rt := range r.Topics {
		t, known := topics.ConsumerTopic(rt.Topic)
		if known && slices.ContainsFunc(del, func(d ShareTopicPartitions) bool { return d.TopicID == t.ID }) {
			continue // named twice
		}
		var parts []int32
		switch {
		case !known:
		case len(initialized[t.ID].Partitions) > 0:
			parts = initialized[t.ID].Partitions
		case deleting[t.ID] != "":
			for p := range t.Partitions {
				parts = append(parts, p)
			}
		}
		if len(parts) == 0 {
			st := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
			st.Topic = rt.Topic
			st.ErrorCode = kerr.UnknownTopicOrPartition.Code
			st.ErrorMessage = kmsg.StringPtr(kerr.UnknownTopicOrPartition.Description)
			resp.Topics = append(resp.Topics, st)
			continue
		}
		del = append(del, ShareTopicPartitions{TopicID: t.ID, TopicName: t.Name, Partitions: slices.Clone(parts)})
		delete(initialized, t.ID)
		delete(initializing, t.ID)
		deleting[t.ID] = t.Name
	}
	if len(del) == 0 {
		done(resp, nil, 0)
		return b.effects()
	}
	e := &emitter[ShareEvent]{apply: g.apply}
	e.emit(ShareStatePartitionsChanged{Initializing: sortedShareTopics(initializing), Initialized: sortedShareTopics(initialized),
		Deleting: shareTopicInfos(deleting)})
	s.persistShare(&b, g, e.events, nil, nil)
	b.writeAnsweredOnce(func(int16) {}, func(code int16) {
		if code != 0 {
			done(nil, nil, code)
			return
		}
		done(resp, del, 0)
	})
	return b.effects()
}

// CompleteDeleteShareGroupOffsets is the last group step of a DeleteShareGroupOffsets
// (Kafka's completeDeleteShareGroupOffsets): the topics whose share state the share
// coordinator deleted leave the group's deleting topics (record 15). done gets the
// write's code once it is committed (at once, 0, when there is nothing to write: the
// group or the topics went meanwhile).
func (s *Shard) CompleteDeleteShareGroupOffsets(now time.Time, groupID string, deleted []ShareTopicInfo, done func(code int16)) Effects {
	s.observe(now)
	var b batch
	g := s.shareGroups[groupID]
	if g == nil {
		done(0)
		return b.effects()
	}
	deleting := maps.Clone(g.deleting)
	for _, t := range deleted {
		delete(deleting, t.TopicID)
	}
	if len(deleting) == len(g.deleting) {
		done(0)
		return b.effects()
	}
	e := &emitter[ShareEvent]{apply: g.apply}
	e.emit(ShareStatePartitionsChanged{Initializing: sortedShareTopics(g.initializing), Initialized: sortedShareTopics(g.initialized),
		Deleting: shareTopicInfos(deleting)})
	s.persistShare(&b, g, e.events, nil, nil)
	b.writeAnsweredOnce(func(int16) {}, done)
	return b.effects()
}

// shareTopicInfos is m (topic id → name) as ShareTopicInfos in topic id order.
func shareTopicInfos(m map[[16]byte]string) []ShareTopicInfo {
	out := make([]ShareTopicInfo, 0, len(m))
	for _, id := range sortedIDs(m) {
		out = append(out, ShareTopicInfo{TopicID: id, TopicName: m[id]})
	}
	return out
}
