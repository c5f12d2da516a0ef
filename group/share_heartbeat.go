package group

// ShareGroupHeartbeat (KIP-932) against one share group, as Kafka 4.2's
// GroupMetadataManager.shareGroupHeartbeat and shareGroupLeave: request validation
// (GroupCoordinatorService.throwIfShareGroupHeartbeatRequestIsInvalid), joins with the
// member id the client generated, epoch fencing, the group epoch and the target
// assignment (SimpleAssignor), the member's move to its target (Kafka's
// ShareGroupAssignmentBuilder: at once, nothing to revoke), the share state
// initialization the heartbeat asks for, and session expiry.

import (
	"bytes"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareHeartbeatResult is the outcome of one ShareGroupHeartbeat: the response to send
// once Events are persisted (an error response has no events), and the share state
// the group asks the share coordinator to initialize, if any.
type ShareHeartbeatResult struct {
	Response   *kmsg.ShareGroupHeartbeatResponse
	Events     []ShareEvent
	Initialize *ShareInitialize
}

// ShareInitialize asks the share coordinator to initialize the share state of
// partitions of group GroupID (Kafka's InitializeShareGroupStateParameters, sent by
// GroupCoordinatorService after the heartbeat's records are written): one
// InitializeShareGroupState with state epoch GroupEpoch and start offset -1 (the
// group's share.auto.offset.reset decides). Its outcome comes back through
// ShareGroup.StateInitialized or StateInitializeFailed.
type ShareInitialize struct {
	GroupID    string
	GroupEpoch int32
	Topics     []ShareTopicPartitions
}

// Heartbeat handles one ShareGroupHeartbeat (v1) at now against the metadata image
// topics:
//
//   - MemberEpoch 0 joins with the member id the client generated (a known member
//     rejoining gets its current state back); past ShareConfig.MaxSize members a new
//     member gets GROUP_MAX_SIZE_REACHED;
//   - MemberEpoch -1 leaves;
//   - otherwise the epoch must be the member's current or previous one, else
//     FENCED_MEMBER_EPOCH; an unknown member gets UNKNOWN_MEMBER_ID.
//
// A new group, a change of subscription or of the subscribed topics' metadata bumps
// the group epoch; a group epoch past the target's recomputes the target with the
// SimpleAssignor over the partitions whose share state is initialized; the member
// then takes its target and the target epoch at once. Subscribed partitions without
// share state are marked initializing and returned in Initialize.
func (g *ShareGroup) Heartbeat(req *kmsg.ShareGroupHeartbeatRequest, c Client, now time.Time, topics ConsumerTopics) ShareHeartbeatResult {
	if err := validateShareHeartbeat(req); err != nil {
		return shareErrorResult(req, err)
	}
	e := &emitter[ShareEvent]{apply: g.apply}
	var resp *kmsg.ShareGroupHeartbeatResponse
	var err *hbError
	if req.MemberEpoch == LeaveMemberEpoch {
		resp, err = g.leave(e, req, topics)
	} else {
		resp, err = g.heartbeat(e, req, c, now, topics)
	}
	if err != nil {
		return shareErrorResult(req, err)
	}
	res := ShareHeartbeatResult{Response: resp}
	if req.MemberEpoch != LeaveMemberEpoch {
		res.Initialize = g.initializeState(e, now, topics)
	}
	res.Events = e.events
	return res
}

func shareErrorResult(req *kmsg.ShareGroupHeartbeatRequest, err *hbError) ShareHeartbeatResult {
	resp := kmsg.NewPtrShareGroupHeartbeatResponse()
	resp.Version = req.Version
	resp.ErrorCode = err.code
	resp.ErrorMessage = kmsg.StringPtr(err.msg)
	return ShareHeartbeatResult{Response: resp}
}

// validateShareHeartbeat is Kafka's throwIfShareGroupHeartbeatRequestIsInvalid.
func validateShareHeartbeat(req *kmsg.ShareGroupHeartbeatRequest) *hbError {
	invalid := func(msg string) *hbError { return &hbError{code: kerr.InvalidRequest.Code, msg: msg} }
	switch {
	case blank(req.MemberID):
		return invalid("MemberId can't be empty.")
	case blank(req.GroupID):
		return invalid("GroupId can't be empty.")
	case req.RackID != nil && blank(*req.RackID):
		return invalid("RackId can't be empty.")
	case req.MemberEpoch == JoinMemberEpoch && len(req.SubscribedTopicNames) == 0:
		return invalid("SubscribedTopicNames must be set in first request.")
	case req.MemberEpoch < LeaveMemberEpoch:
		return invalid("MemberEpoch is invalid.")
	}
	return nil
}

// checkShareMemberEpoch is Kafka's throwIfShareGroupMemberEpochIsInvalid, with epoch 0
// (a member rejoining under its own id) accepted.
func checkShareMemberEpoch(m *shareMember, got int32) *hbError {
	switch {
	case got == JoinMemberEpoch || got == m.epoch:
		return nil
	case got > m.epoch:
		return hbErrorf(kerr.FencedMemberEpoch, "The share group member has a greater member epoch (%d) than the one known "+
			"by the group coordinator (%d). The member must abandon all its partitions and rejoin.", got, m.epoch)
	case got != m.previousEpoch:
		return hbErrorf(kerr.FencedMemberEpoch, "The share group member has a smaller member epoch (%d) than the one known "+
			"by the group coordinator (%d), and it does not match the previous member epoch (%d). The member must abandon "+
			"all its partitions and rejoin.", got, m.epoch, m.previousEpoch)
	}
	return nil
}

// heartbeat is a join or a regular heartbeat (MemberEpoch >= 0).
func (g *ShareGroup) heartbeat(e *emitter[ShareEvent], req *kmsg.ShareGroupHeartbeatRequest, c Client, now time.Time, topics ConsumerTopics) (*kmsg.ShareGroupHeartbeatResponse, *hbError) {
	id := req.MemberID
	old := g.members[id]
	switch {
	case old == nil && len(g.members) >= g.cfg.MaxSize:
		return nil, hbErrorf(kerr.GroupMaxSizeReached, "The share group has reached its maximum capacity of %d members.", g.cfg.MaxSize)
	case old == nil && req.MemberEpoch != JoinMemberEpoch:
		return nil, unknownMember(id, g.id)
	case old != nil:
		if err := checkShareMemberEpoch(old, req.MemberEpoch); err != nil {
			return nil, err
		}
	}
	before, beforeAssigned := ShareMemberUpdated{MemberID: id}, AssignedPartitions{}
	if old != nil {
		before, beforeAssigned = old.meta, old.assigned
	}
	meta := before
	meta.ClientID, meta.ClientHost = c.ID, c.Host
	if req.RackID != nil {
		meta.RackID = *req.RackID
	}
	if req.SubscribedTopicNames != nil {
		meta.SubscribedTopicNames = slices.Compact(slices.Sorted(slices.Values(req.SubscribedTopicNames)))
	}
	subscriptionChanged := !slices.Equal(meta.SubscribedTopicNames, before.SubscribedTopicNames)
	if old == nil || !shareMetaEqual(old.meta, meta) {
		e.emit(meta)
	}
	if hash := g.subscriptionHash(topics); g.groupEpoch == 0 || subscriptionChanged || hash != g.metadataHash {
		e.emit(ShareGroupEpochBumped{Epoch: g.groupEpoch + 1, MetadataHash: hash})
	}
	if g.groupEpoch > g.targetEpoch {
		e.emit(ShareTargetAssignmentChanged(targetDelta(g.target, g.groupEpoch, g.computeTarget(topics))))
	}
	m := g.members[id]
	if target := g.target[id]; m.epoch != g.targetEpoch || !assignmentsEqual(m.assigned, target) {
		e.emit(ShareMemberAssignmentChanged{MemberID: id, MemberEpoch: g.targetEpoch, PreviousMemberEpoch: m.epoch,
			Assigned: cloneAssignment(target)})
	}
	m.sessionDeadline = now.Add(g.cfg.SessionTimeout)

	resp := kmsg.NewPtrShareGroupHeartbeatResponse()
	resp.Version = req.Version
	resp.MemberID = kmsg.StringPtr(id)
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(g.cfg.HeartbeatInterval / time.Millisecond)
	if req.MemberEpoch == JoinMemberEpoch || !assignmentsEqual(beforeAssigned, m.assigned) {
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		a.TopicPartitions = []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}
		for _, t := range sortedTopics(m.assigned) {
			tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			tp.TopicID, tp.Partitions = t, slices.Clone(m.assigned[t])
			a.TopicPartitions = append(a.TopicPartitions, tp)
		}
		resp.Assignment = &a
	}
	return resp, nil
}

func shareMetaEqual(a, b ShareMemberUpdated) bool {
	return a.MemberID == b.MemberID && a.RackID == b.RackID && a.ClientID == b.ClientID &&
		a.ClientHost == b.ClientHost && slices.Equal(a.SubscribedTopicNames, b.SubscribedTopicNames)
}

// subscriptionHash digests the metadata of the topics the members subscribe to.
func (g *ShareGroup) subscriptionHash(topics ConsumerTopics) int64 {
	return metadataHash(slices.Sorted(maps.Keys(g.subscribed)), topics)
}

// computeTarget runs the SimpleAssignor over the members and the partitions whose
// share state is initialized (Kafka's GroupSpec.isPartitionAssignable).
func (g *ShareGroup) computeTarget(topics ConsumerTopics) map[string]AssignedPartitions {
	counts := map[[16]byte]int32{}
	members := make([]shareAssignee, 0, len(g.members))
	for _, id := range g.MemberIDs() {
		a := shareAssignee{id: id, current: g.target[id]}
		for _, name := range g.members[id].meta.SubscribedTopicNames {
			if t, ok := topics.ConsumerTopic(name); ok && t.Partitions > 0 {
				counts[t.ID] = t.Partitions
				a.topics = append(a.topics, t.ID)
			}
		}
		slices.SortFunc(a.topics, func(x, y [16]byte) int { return bytes.Compare(x[:], y[:]) })
		a.topics = slices.Compact(a.topics)
		members = append(members, a)
	}
	assignable := map[[16]byte][]int32{}
	for id, n := range counts {
		for _, p := range g.initialized[id].Partitions {
			if p < n {
				assignable[id] = append(assignable[id], p)
			}
		}
	}
	return simpleAssign(members, assignable)
}

// leave handles MemberEpoch -1 (Kafka's shareGroupLeave).
func (g *ShareGroup) leave(e *emitter[ShareEvent], req *kmsg.ShareGroupHeartbeatRequest, topics ConsumerTopics) (*kmsg.ShareGroupHeartbeatResponse, *hbError) {
	m := g.members[req.MemberID]
	if m == nil {
		return nil, unknownMember(req.MemberID, g.id)
	}
	g.fence(e, m, topics)
	resp := kmsg.NewPtrShareGroupHeartbeatResponse()
	resp.Version = req.Version
	resp.MemberID = kmsg.StringPtr(req.MemberID)
	resp.MemberEpoch = LeaveMemberEpoch
	return resp, nil
}

// fence removes a member and bumps the group epoch (Kafka's shareGroupFenceMember).
func (g *ShareGroup) fence(e *emitter[ShareEvent], m *shareMember, topics ConsumerTopics) {
	e.emit(ShareMemberRemoved{MemberID: m.meta.MemberID})
	e.emit(ShareGroupEpochBumped{Epoch: g.groupEpoch + 1, MetadataHash: g.subscriptionHash(topics)})
}

// initializeState marks the subscribed partitions without share state as
// initializing (Kafka's maybeCreateInitializeShareGroupStateRequest) and returns them,
// with the initializing ones asked for longer than InitializeRetryInterval ago.
func (g *ShareGroup) initializeState(e *emitter[ShareEvent], now time.Time, topics ConsumerTopics) *ShareInitialize {
	var ask []ShareTopicPartitions
	next := maps.Clone(g.initializing)
	added := false
	for _, name := range slices.Sorted(maps.Keys(g.subscribed)) {
		t, ok := topics.ConsumerTopic(name)
		if !ok || t.Partitions <= 0 {
			continue
		}
		var fresh []int32
		for p := int32(0); p < t.Partitions; p++ {
			if !slices.Contains(g.initialized[t.ID].Partitions, p) && !slices.Contains(g.initializing[t.ID].Partitions, p) {
				fresh = append(fresh, p)
			}
		}
		stale := slices.Clone(g.initializing[t.ID].Partitions)
		if since, ok := g.initializingSince[t.ID]; ok && now.Sub(since) < g.cfg.InitializeRetryInterval {
			stale = nil
		}
		if len(fresh) == 0 && len(stale) == 0 {
			continue
		}
		if len(fresh) > 0 {
			added = true
			cur := next[t.ID]
			next[t.ID] = ShareTopicPartitions{TopicID: t.ID, TopicName: t.Name,
				Partitions: slices.Sorted(slices.Values(append(slices.Clone(cur.Partitions), fresh...)))}
		}
		all := slices.Sorted(slices.Values(append(stale, fresh...)))
		ask = append(ask, ShareTopicPartitions{TopicID: t.ID, TopicName: t.Name, Partitions: all})
	}
	if added {
		e.emit(ShareStatePartitionsChanged{Initializing: sortedShareTopics(next), Initialized: sortedShareTopics(g.initialized),
			Deleting: g.deletingTopics()})
	}
	if len(ask) == 0 {
		return nil
	}
	for _, t := range ask {
		g.initializingSince[t.TopicID] = now
	}
	return &ShareInitialize{GroupID: g.id, GroupEpoch: g.groupEpoch, Topics: ask}
}

// StateInitialized records that the share coordinator initialized the share state of
// parts (Kafka's GroupMetadataManager.initializeShareGroupState): they move from
// initializing to initialized, and the group epoch is bumped so that the next
// heartbeat assigns them. Partitions not initializing (any more) are ignored.
func (g *ShareGroup) StateInitialized(parts []ShareTopicPartitions, topics ConsumerTopics) []ShareEvent {
	return g.settleInitializing(parts, true, topics)
}

// StateInitializeFailed records that initializing parts failed (Kafka's
// uninitializeShareGroupState): they leave initializing, and the next heartbeat asks
// for them again.
func (g *ShareGroup) StateInitializeFailed(parts []ShareTopicPartitions) []ShareEvent {
	return g.settleInitializing(parts, false, nil)
}

func (g *ShareGroup) settleInitializing(parts []ShareTopicPartitions, ok bool, topics ConsumerTopics) []ShareEvent {
	initializing, initialized := maps.Clone(g.initializing), maps.Clone(g.initialized)
	moved := false
	for _, t := range parts {
		cur, found := initializing[t.TopicID]
		if !found {
			continue
		}
		keep := slices.DeleteFunc(slices.Clone(cur.Partitions), func(p int32) bool { return slices.Contains(t.Partitions, p) })
		if len(keep) == len(cur.Partitions) {
			continue
		}
		moved = true
		if ok {
			done := initialized[t.TopicID]
			initialized[t.TopicID] = ShareTopicPartitions{TopicID: t.TopicID, TopicName: cur.TopicName,
				Partitions: append(slices.Clone(done.Partitions), slices.DeleteFunc(slices.Clone(cur.Partitions), func(p int32) bool { return slices.Contains(keep, p) })...)}
		}
		cur.Partitions = keep
		initializing[t.TopicID] = cur
	}
	if !moved {
		return nil
	}
	e := &emitter[ShareEvent]{apply: g.apply}
	e.emit(ShareStatePartitionsChanged{Initializing: sortedShareTopics(shareTopicMap(slices.Collect(maps.Values(initializing)))),
		Initialized: sortedShareTopics(shareTopicMap(slices.Collect(maps.Values(initialized)))), Deleting: g.deletingTopics()})
	if ok {
		e.emit(ShareGroupEpochBumped{Epoch: g.groupEpoch + 1, MetadataHash: g.subscriptionHash(topics)})
	}
	return e.events
}

// Expire removes, at now, every member whose session timed out (no heartbeat within
// ShareConfig.SessionTimeout), each removal bumping the group epoch. Members whose
// timers were never started (after Replay, before StartTimers) are left alone.
func (g *ShareGroup) Expire(now time.Time, topics ConsumerTopics) []ShareEvent {
	e := &emitter[ShareEvent]{apply: g.apply}
	for _, id := range g.MemberIDs() {
		if m := g.members[id]; !m.sessionDeadline.IsZero() && !now.Before(m.sessionDeadline) {
			g.fence(e, m, topics)
		}
	}
	return e.events
}

// NextDeadline is the earliest session deadline; ok is false when no timer runs.
func (g *ShareGroup) NextDeadline() (at time.Time, ok bool) {
	for _, m := range g.members {
		if t := m.sessionDeadline; !t.IsZero() && (!ok || t.Before(at)) {
			at, ok = t, true
		}
	}
	return at, ok
}

// StartTimers starts, at now, every member's session timer and the retry clock of the
// partitions being initialized (Kafka starts them when it loads the partition).
func (g *ShareGroup) StartTimers(now time.Time) {
	for _, m := range g.members {
		m.sessionDeadline = now.Add(g.cfg.SessionTimeout)
	}
	for id := range g.initializing {
		g.initializingSince[id] = now
	}
}
