package group

// ConsumerGroupHeartbeat (KIP-848) against one consumer group: request validation
// (Kafka's GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid),
// joins, leaves, static membership and epoch fencing (GroupMetadataManager
// .consumerGroupHeartbeat and consumerGroupLeave). The target assignment is
// consumer_target.go, the member's reconciliation consumer_reconcile.go.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerTopics is the metadata image as a consumer group reads it: a topic's id,
// partition count (and optionally partition racks) by name, and the names a regular
// expression subscription is matched against.
type ConsumerTopics interface {
	ConsumerTopic(name string) (AssignorTopic, bool)
	// ConsumerTopicNames returns the names of the topics a regular expression may
	// match, sorted: every topic but the internal ones (__consumer_offsets,
	// __transaction_state), as Kafka excludes them from regex subscriptions.
	ConsumerTopicNames() []string
}

// ConsumerTopicMap is a ConsumerTopics held in a map keyed by topic name.
type ConsumerTopicMap map[string]AssignorTopic

// ConsumerTopic returns the topic named name.
func (m ConsumerTopicMap) ConsumerTopic(name string) (AssignorTopic, bool) {
	t, ok := m[name]
	return t, ok
}

// ConsumerTopicNames returns the map's names, sorted, without those of Kafka's internal
// topics.
func (m ConsumerTopicMap) ConsumerTopicNames() []string {
	names := make([]string, 0, len(m))
	for n := range m {
		if n != "__consumer_offsets" && n != "__transaction_state" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// ConsumerClient is who sent a heartbeat, from the request header and the connection:
// stored in the member's metadata (ConsumerGroupDescribe shows them).
type ConsumerClient struct {
	ClientID   string
	ClientHost string
	// Classic is set for a classic member's JoinGroup (consumer_classic.go), nil for a
	// ConsumerGroupHeartbeat.
	Classic *ClassicMemberMetadata
}

// ConsumerHeartbeatResult is the outcome of one ConsumerGroupHeartbeat: the response
// to send once Events are persisted (an error response has no events).
type ConsumerHeartbeatResult struct {
	Response *kmsg.ConsumerGroupHeartbeatResponse
	Events   []ConsumerEvent
}

// hbError is a heartbeat rejected with a Kafka error code and Kafka's message.
type hbError struct {
	code int16
	msg  string
}

func hbErrorf(err *kerr.Error, format string, args ...any) *hbError {
	return &hbError{code: err.Code, msg: fmt.Sprintf(format, args...)}
}

// Heartbeat handles one ConsumerGroupHeartbeat request (any version) for this group at
// now, against the topic metadata in topics:
//
//   - MemberEpoch 0 joins: a v1+ client brings its own member id (KIP-1082), a v0 one
//     gets one from ConsumerConfig.NewMemberID; a known member rejoining with epoch 0
//     gets its current state back (KAFKA-19233). A static member (InstanceID set)
//     replaces the instance's previous member only once that one left with epoch -2,
//     else UNRELEASED_INSTANCE_ID.
//   - MemberEpoch -1 leaves; -2 is a static member's temporary leave that keeps its
//     assignment until its session times out.
//   - Otherwise the member's epoch must be its current one (or its previous one while
//     the partitions it reports owning are a subset of its assignment), else
//     FENCED_MEMBER_EPOCH.
//
// A change of subscription or of the subscribed topics' metadata bumps the group epoch;
// a group epoch past the target assignment's recomputes the target with the assignor
// the members prefer; then the member moves toward its target (CurrentAssignmentBuilder).
func (g *ConsumerGroup) Heartbeat(req *kmsg.ConsumerGroupHeartbeatRequest, client ConsumerClient, now time.Time, topics ConsumerTopics) ConsumerHeartbeatResult {
	if err := g.validateHeartbeat(req); err != nil {
		return g.errorResult(req, err)
	}
	e := &emitter[ConsumerEvent]{apply: g.apply}
	var resp *kmsg.ConsumerGroupHeartbeatResponse
	var err *hbError
	if req.MemberEpoch == LeaveMemberEpoch || req.MemberEpoch == LeaveStaticMemberEpoch {
		resp, err = g.leave(e, req, now, topics)
	} else {
		resp, err = g.heartbeat(e, req, client, now, topics)
	}
	if err != nil {
		return g.errorResult(req, err)
	}
	return ConsumerHeartbeatResult{Response: resp, Events: e.events}
}

func (g *ConsumerGroup) errorResult(req *kmsg.ConsumerGroupHeartbeatRequest, err *hbError) ConsumerHeartbeatResult {
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.Version = req.Version
	resp.ErrorCode = err.code
	resp.ErrorMessage = kmsg.StringPtr(err.msg)
	return ConsumerHeartbeatResult{Response: resp}
}

func blank(s string) bool { return strings.TrimSpace(s) == "" }

// validateHeartbeat is Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid.
func (g *ConsumerGroup) validateHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) *hbError {
	invalid := func(msg string) *hbError { return &hbError{code: kerr.InvalidRequest.Code, msg: msg} }
	if (req.Version >= 1 || req.MemberEpoch > 0 || req.MemberEpoch == LeaveMemberEpoch) && blank(req.MemberID) {
		return invalid("MemberId can't be empty.")
	}
	if blank(req.Group) {
		return invalid("GroupId can't be empty.")
	}
	if req.InstanceID != nil && blank(*req.InstanceID) {
		return invalid("InstanceId can't be empty.")
	}
	if req.RackID != nil && blank(*req.RackID) {
		return invalid("RackId can't be empty.")
	}
	switch {
	case req.MemberEpoch == JoinMemberEpoch:
		if req.RebalanceTimeoutMillis == -1 {
			return invalid("RebalanceTimeoutMs must be provided in first request.")
		}
		if req.Topics == nil || len(req.Topics) > 0 {
			return invalid("TopicPartitions must be empty when (re-)joining.")
		}
		if req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil {
			return invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
		}
		if req.MemberID == "" && g.cfg.NewMemberID == nil {
			return invalid("MemberId can't be empty.")
		}
	case req.MemberEpoch == LeaveStaticMemberEpoch:
		if req.InstanceID == nil {
			return invalid("InstanceId can't be null.")
		}
	case req.MemberEpoch < LeaveStaticMemberEpoch:
		return invalid("MemberEpoch is invalid.")
	}
	if req.ServerAssignor != nil {
		if _, ok := FindAssignor(g.cfg.Assignors, *req.ServerAssignor); !ok || *req.ServerAssignor == "" {
			names := make([]string, len(g.cfg.Assignors))
			for i, a := range g.cfg.Assignors {
				names[i] = a.Name()
			}
			return hbErrorf(kerr.UnsupportedAssignor, "ServerAssignor %s is not supported. Supported assignors: %s.",
				*req.ServerAssignor, strings.Join(names, ", "))
		}
	}
	return nil
}

func unknownMember(memberID, groupID string) *hbError {
	return hbErrorf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", memberID, groupID)
}

// checkMemberEpoch is Kafka's throwIfConsumerGroupMemberEpochIsInvalid, with epoch 0
// (a fenced member rejoining under its own id) accepted as KAFKA-19233 does.
func checkMemberEpoch(m *consumerMember, req *kmsg.ConsumerGroupHeartbeatRequest) *hbError {
	got := req.MemberEpoch
	switch {
	case got == JoinMemberEpoch:
		return nil
	case got > m.epoch:
		return hbErrorf(kerr.FencedMemberEpoch, "The consumer group member has a greater member epoch (%d) than the one "+
			"known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", got, m.epoch)
	case got < m.epoch:
		// The response that moved the member to its epoch may have been lost.
		if got != m.previousEpoch || !ownedSubsetOf(req.Topics, m.assigned) {
			return hbErrorf(kerr.FencedMemberEpoch, "The consumer group member has a smaller member epoch (%d) than the one "+
				"known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", got, m.epoch)
		}
	}
	return nil
}

// ownedSubsetOf reports whether every partition the member reports owning is in a
// (false when it did not report them).
func ownedSubsetOf(owned []kmsg.ConsumerGroupHeartbeatRequestTopic, a AssignedPartitions) bool {
	return owned != nil && !anyOwned(owned, func(t [16]byte, p int32) bool { return !assignmentContains(a, t, p) })
}

// anyOwned reports whether f holds for a partition the member reports owning.
func anyOwned(owned []kmsg.ConsumerGroupHeartbeatRequestTopic, f func(t [16]byte, p int32) bool) bool {
	for _, t := range owned {
		for _, p := range t.Partitions {
			if f(t.TopicID, p) {
				return true
			}
		}
	}
	return false
}

// heartbeat is a join or a regular heartbeat (MemberEpoch >= 0).
func (g *ConsumerGroup) heartbeat(e *emitter[ConsumerEvent], req *kmsg.ConsumerGroupHeartbeatRequest, client ConsumerClient, now time.Time, topics ConsumerTopics) (*kmsg.ConsumerGroupHeartbeatResponse, *hbError) {
	join := req.MemberEpoch == JoinMemberEpoch
	memberID := req.MemberID
	if g.cfg.MaxSize > 0 && len(g.members) >= g.cfg.MaxSize && (memberID == "" || g.members[memberID] == nil) {
		return nil, hbErrorf(kerr.GroupMaxSizeReached, "The consumer group has reached its maximum capacity of %d members.", g.cfg.MaxSize)
	}
	if memberID == "" {
		memberID = g.cfg.NewMemberID()
	}

	// The member as it stands before this request, and the static member it replaces.
	var old, replaced *consumerMember
	if req.InstanceID == nil {
		old = g.members[memberID]
		if old == nil && !join {
			return nil, unknownMember(memberID, g.id)
		}
		if old != nil {
			if err := checkMemberEpoch(old, req); err != nil {
				return nil, err
			}
		}
	} else {
		instanceID := *req.InstanceID
		existing := g.members[g.static[instanceID]]
		switch {
		case join && existing == nil:
			old = g.members[memberID]
		case join:
			if existing.epoch != LeaveStaticMemberEpoch {
				return nil, hbErrorf(kerr.UnreleasedInstanceID, "Static member %s with instance id %s cannot join the group "+
					"because the instance id is owned by %s member.", memberID, instanceID, existing.meta.MemberID)
			}
			replaced = existing
		case existing == nil:
			return nil, hbErrorf(kerr.UnknownMemberID, "Instance id %s is unknown.", instanceID)
		case existing.meta.MemberID != memberID:
			return nil, hbErrorf(kerr.FencedInstanceID, "Static member %s with instance id %s was fenced by member %s.",
				memberID, instanceID, existing.meta.MemberID)
		default:
			if err := checkMemberEpoch(existing, req); err != nil {
				return nil, err
			}
			old = existing
		}
	}

	// The member's metadata after this request.
	var before ConsumerMemberUpdated
	var beforeAssigned AssignedPartitions
	switch {
	case replaced != nil:
		before = replaced.meta
		before.MemberID = memberID
		beforeAssigned = replaced.assigned
	case old != nil:
		before = old.meta
		beforeAssigned = old.assigned
	default:
		before = ConsumerMemberUpdated{MemberID: memberID, RebalanceTimeoutMs: -1}
	}
	meta := updatedMeta(before, req, client)
	subscriptionChanged := !slices.Equal(meta.SubscribedTopicNames, before.SubscribedTopicNames) ||
		meta.SubscribedTopicRegex != before.SubscribedTopicRegex

	// The group epoch, and the target assignment if it is behind: computed before any
	// change so that a failing assignor leaves the group as it was.
	rx, rxErr := g.planRegexes(meta, replaced, now, topics)
	if rxErr != nil {
		return nil, rxErr
	}
	plan := g.planAssignment(meta, replaced, subscriptionChanged || rx.changed, topics, &rx)
	if plan.err != nil {
		return nil, plan.err
	}

	// Persist: the replacement of a static member, the member's metadata, the
	// regular expressions, the group epoch, the target assignment (Kafka's record
	// order).
	if replaced != nil {
		g.replaceStatic(e, replaced, memberID)
	}
	if cur, ok := g.members[memberID]; !ok || !metaEqual(cur.meta, meta) {
		e.emit(meta)
	}
	for _, ev := range rx.events {
		e.emit(ev)
	}
	if plan.bump {
		e.emit(ConsumerGroupEpochBumped{Epoch: plan.groupEpoch, MetadataHash: plan.hash})
	}
	if plan.target != nil {
		e.emit(g.targetChange(plan.groupEpoch, plan.target))
	}

	m := g.members[memberID]
	g.reconcile(e, m, req.Topics, now, topics)
	m.sessionDeadline = now.Add(m.sessionTimeout(g.cfg))

	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.Version = req.Version
	resp.MemberID = kmsg.StringPtr(memberID)
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(g.cfg.HeartbeatInterval / time.Millisecond)
	// The assignment goes with a full request (a join, or every field a full request
	// carries) and whenever it changed.
	full := join || (req.RebalanceTimeoutMillis != -1 && (req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Topics != nil)
	if full || !assignmentsEqual(beforeAssigned, m.assigned) {
		resp.Assignment = responseAssignment(m.assigned)
	}
	return resp, nil
}

// updatedMeta applies the request's set fields to the member's metadata (a null field
// leaves the value as it was).
func updatedMeta(m ConsumerMemberUpdated, req *kmsg.ConsumerGroupHeartbeatRequest, client ConsumerClient) ConsumerMemberUpdated {
	m.ClientID, m.ClientHost = client.ClientID, client.ClientHost
	m.Classic = client.Classic
	if req.InstanceID != nil {
		m.InstanceID = *req.InstanceID
	}
	if req.RackID != nil {
		m.RackID = *req.RackID
	}
	if req.RebalanceTimeoutMillis != -1 {
		m.RebalanceTimeoutMs = req.RebalanceTimeoutMillis
	}
	if req.ServerAssignor != nil {
		m.ServerAssignor = *req.ServerAssignor
	}
	if req.SubscribedTopicNames != nil {
		names := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(names)
		m.SubscribedTopicNames = slices.Compact(names)
	}
	if req.SubscribedTopicRegex != nil {
		m.SubscribedTopicRegex = *req.SubscribedTopicRegex
	}
	return m
}

func metaEqual(a, b ConsumerMemberUpdated) bool {
	return a.MemberID == b.MemberID && a.InstanceID == b.InstanceID && a.RackID == b.RackID &&
		a.ClientID == b.ClientID && a.ClientHost == b.ClientHost &&
		slices.Equal(a.SubscribedTopicNames, b.SubscribedTopicNames) &&
		a.SubscribedTopicRegex == b.SubscribedTopicRegex && a.ServerAssignor == b.ServerAssignor &&
		a.RebalanceTimeoutMs == b.RebalanceTimeoutMs && classicMetaEqual(a.Classic, b.Classic)
}

// replaceStatic hands a static member that left with epoch -2 over to its instance's
// new member id (Kafka's replaceMember): the old member's records are tombstoned and
// rewritten under the new id, at member epoch 0, keeping its assignment and target.
func (g *ConsumerGroup) replaceStatic(e *emitter[ConsumerEvent], old *consumerMember, newID string) {
	meta := old.meta
	meta.MemberID = newID
	meta.SubscribedTopicNames = slices.Clone(old.meta.SubscribedTopicNames)
	target := cloneAssignment(g.target[old.meta.MemberID])
	assigned, pending := cloneAssignment(old.assigned), cloneAssignment(old.pending)
	state := old.state
	e.emit(ConsumerMemberRemoved{MemberID: old.meta.MemberID})
	e.emit(meta)
	e.emit(ConsumerTargetAssignmentChanged{Epoch: g.targetEpoch, Members: []ConsumerTargetMember{{MemberID: newID, Partitions: target}}})
	e.emit(ConsumerMemberAssignmentChanged{MemberID: newID, State: state, Assigned: assigned, PendingRevocation: pending})
}

// leave handles MemberEpoch -1 and -2 (Kafka's consumerGroupLeave).
func (g *ConsumerGroup) leave(e *emitter[ConsumerEvent], req *kmsg.ConsumerGroupHeartbeatRequest, now time.Time, topics ConsumerTopics) (*kmsg.ConsumerGroupHeartbeatResponse, *hbError) {
	var m *consumerMember
	if req.InstanceID == nil {
		if m = g.members[req.MemberID]; m == nil {
			return nil, unknownMember(req.MemberID, g.id)
		}
	} else {
		instanceID := *req.InstanceID
		if m = g.members[g.static[instanceID]]; m == nil {
			return nil, hbErrorf(kerr.UnknownMemberID, "Instance id %s is unknown.", instanceID)
		}
		if m.meta.MemberID != req.MemberID {
			return nil, hbErrorf(kerr.FencedInstanceID, "Static member %s with instance id %s was fenced by member %s.",
				req.MemberID, instanceID, m.meta.MemberID)
		}
	}
	if req.MemberEpoch == LeaveStaticMemberEpoch {
		// The member stays, at epoch -2, with its assignment, until it rejoins or its
		// session times out; what it was revoking is released.
		e.emit(ConsumerMemberAssignmentChanged{
			MemberID: m.meta.MemberID, MemberEpoch: LeaveStaticMemberEpoch, PreviousMemberEpoch: m.previousEpoch,
			State: m.state, Assigned: cloneAssignment(m.assigned), PendingRevocation: AssignedPartitions{},
		})
		m.sessionDeadline = now.Add(g.cfg.SessionTimeout)
		m.revocationDeadline = time.Time{}
	} else {
		g.fence(e, m, topics)
	}
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.Version = req.Version
	resp.MemberID = kmsg.StringPtr(req.MemberID)
	resp.MemberEpoch = req.MemberEpoch
	return resp, nil
}

// fence removes a member, deletes the regular expressions no member uses any more,
// and bumps the group epoch (Kafka's consumerGroupFenceMember).
func (g *ConsumerGroup) fence(e *emitter[ConsumerEvent], m *consumerMember, topics ConsumerTopics) {
	e.emit(ConsumerMemberRemoved{MemberID: m.meta.MemberID})
	g.dropUnusedRegexes(e)
	e.emit(ConsumerGroupEpochBumped{Epoch: g.groupEpoch + 1, MetadataHash: g.subscriptionHash(topics)})
}

// responseAssignment is a's form in the response, topics in id order.
func responseAssignment(a AssignedPartitions) *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	out := &kmsg.ConsumerGroupHeartbeatResponseAssignment{}
	out.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	for _, t := range sortedTopics(a) {
		rt := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		rt.TopicID = t
		rt.Partitions = slices.Clone(a[t])
		out.Topics = append(out.Topics, rt)
	}
	return out
}
