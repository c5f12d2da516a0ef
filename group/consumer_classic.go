package group

// Members of the classic protocol in a consumer group (Kafka 4.2's
// GroupMetadataManager.classicGroupJoinToConsumerGroup, classicGroupSyncToConsumerGroup,
// classicGroupHeartbeatToConsumerGroup and classicGroupLeaveToConsumerGroup): a classic
// consumer (protocol type "consumer") joining a consumer group with members, or one of
// the classic members an online upgrade carried over (consumer_migrate.go), is served
// by the consumer group:
//
//   - JoinGroup is a heartbeat of the member: its subscription and the partitions it
//     reports owning are read from its ConsumerProtocolSubscription, the group epoch
//     and target assignment move as for a ConsumerGroupHeartbeat, and the member
//     reconciles (revoke before assign). The response carries the member epoch as the
//     generation, no leader and no members: the server-side assignor assigns.
//   - SyncGroup answers the member's current assignment as a ConsumerProtocolAssignment.
//   - Heartbeat answers REBALANCE_IN_PROGRESS while the member must rejoin: the group
//     epoch moved past its epoch, it has partitions to revoke, or partitions it waits
//     for were released.
//   - LeaveGroup removes the member, bumping the group epoch.
//
// A member told to rejoin must send JoinGroup, and one that joined SyncGroup, within
// its rebalance timeout, or Expire removes it (Kafka's join and sync timeouts).
//
// The member's metadata record carries its ClassicMemberMetadata (session timeout and
// JoinGroup protocols); its session timeout is its own.

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// classicProtocolsSupported is Kafka's ConsumerGroup.supportsClassicProtocols: the
// protocol type is "consumer", and, when the group has classic members, one of
// protocols is supported by every one of them.
func (g *ConsumerGroup) classicProtocolsSupported(protocolType string, protocols []kmsg.JoinGroupRequestProtocol) bool {
	if protocolType != consumerProtocolType || len(protocols) == 0 {
		return false
	}
	_, ok := g.commonClassicProtocol(protocols)
	return ok
}

// commonClassicProtocol is the first of protocols that every classic member of g
// supports (the first of protocols when g has none).
func (g *ConsumerGroup) commonClassicProtocol(protocols []kmsg.JoinGroupRequestProtocol) (string, bool) {
	for _, p := range protocols {
		all := true
		for _, m := range g.members {
			if m.meta.Classic != nil && !slices.ContainsFunc(m.meta.Classic.SupportedProtocols,
				func(c ClassicProtocol) bool { return c.Name == p.Name }) {
				all = false
				break
			}
		}
		if all {
			return p.Name, true
		}
	}
	return "", false
}

// classicJoinToConsumer is a JoinGroup of group g, a consumer group, at now (see the
// file comment). The caller validated the group id, strings and session timeout.
func (s *Shard) classicJoinToConsumer(now time.Time, c Client, g *ConsumerGroup, req *kmsg.JoinGroupRequest, send func(kmsg.Response)) Effects {
	var b batch
	fail := func(code int16, memberID string) Effects {
		b.reply(send, joinResponse(req.Version, code, memberID))
		return b.effects()
	}
	if s.cfg.ConsumerTopics == nil || !g.classicProtocolsSupported(req.ProtocolType, req.Protocols) {
		return fail(errInconsistentProtocol, req.MemberID)
	}
	protocolName, _ := g.commonClassicProtocol(req.Protocols)
	memberID := req.MemberID
	if memberID == "" {
		memberID = s.newMemberID(c.ID, req.InstanceID)
		if req.Version >= 4 && req.InstanceID == nil {
			return fail(errMemberIDRequired, memberID) // KIP-394: the member joins again with it
		}
	}
	old := g.members[memberID]
	if old != nil && old.meta.Classic == nil {
		return fail(errUnknownMemberID, memberID) // a consumer-protocol member
	}
	var sub kmsg.ConsumerMemberMetadata
	if err := sub.ReadFrom(req.Protocols[0].Metadata); err != nil {
		return fail(errInconsistentProtocol, memberID)
	}
	topics := s.cfg.ConsumerTopics()
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.InstanceID = 1, req.Group, memberID, req.InstanceID
	if sub.Rack != nil && !blank(*sub.Rack) {
		hb.RackID = sub.Rack
	}
	hb.RebalanceTimeoutMillis = req.RebalanceTimeoutMillis
	if req.Version == 0 {
		hb.RebalanceTimeoutMillis = req.SessionTimeoutMillis
	}
	hb.SubscribedTopicNames = append([]string{}, sub.Topics...)
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if old != nil && old.epoch > 0 { // a known member's rejoin: a full heartbeat
		hb.MemberEpoch = old.epoch
		hb.Topics = ownedByClassic(sub.OwnedPartitions, topics)
	}
	classic := &ClassicMemberMetadata{SessionTimeoutMs: req.SessionTimeoutMillis}
	for _, p := range req.Protocols {
		classic.SupportedProtocols = append(classic.SupportedProtocols, ClassicProtocol{Name: p.Name, Metadata: slices.Clone(p.Metadata)})
	}
	// A static member restarted with a new member id replaces its instance's classic
	// member (Kafka's classic semantics): the old one leaves temporarily (epoch -2),
	// and the join takes its place, keeping its assignment.
	var replaced []ConsumerEvent
	if iid := req.InstanceID; iid != nil && old == nil {
		if prev := g.members[g.static[*iid]]; prev != nil && prev.meta.Classic != nil && prev.epoch != LeaveStaticMemberEpoch {
			leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			leave.Version, leave.Group, leave.MemberID, leave.InstanceID = 1, req.Group, prev.meta.MemberID, iid
			leave.MemberEpoch = LeaveStaticMemberEpoch
			replaced = g.Heartbeat(leave, ConsumerClient{}, now, topics).Events
		}
	}
	res := g.Heartbeat(hb, ConsumerClient{ClientID: c.ID, ClientHost: c.Host, Classic: classic}, now, topics)
	if res.Response.ErrorCode != 0 {
		if len(replaced) > 0 { // the temporary leave stands
			s.persistConsumer(&b, g, replaced, nil)
		}
		return fail(classicCode(res.Response.ErrorCode), memberID)
	}
	res.Events = append(replaced, res.Events...)
	// It must now send SyncGroup within its rebalance timeout.
	g.members[memberID].classicDeadline = now.Add(ms(g.members[memberID].meta.RebalanceTimeoutMs))
	hbResp := res.Response
	b.reply(func(kmsg.Response) {
		if hbResp.ErrorCode != 0 { // the write failed
			send(joinResponse(req.Version, hbResp.ErrorCode, memberID))
			return
		}
		resp := joinResponse(req.Version, 0, memberID)
		resp.Generation = hbResp.MemberEpoch
		resp.ProtocolType = kmsg.StringPtr(consumerProtocolType)
		resp.Protocol = kmsg.StringPtr(protocolName)
		send(resp)
	}, hbResp)
	if len(res.Events) > 0 {
		s.persistConsumer(&b, g, res.Events, hbResp)
		s.consumerRebalanced(g, res.Events, now)
	}
	return b.effects()
}

// classicCode is the classic protocol's answer for a consumer heartbeat's error.
func classicCode(code int16) int16 {
	if code == kerr.FencedMemberEpoch.Code {
		return errIllegalGeneration
	}
	return code
}

// ownedByClassic is the partitions a classic member reports owning (its
// subscription's OwnedPartitions, v1+), by topic id; topics the image does not know
// are left out.
func ownedByClassic(owned []kmsg.ConsumerMemberMetadataOwnedPartition, topics ConsumerTopics) []kmsg.ConsumerGroupHeartbeatRequestTopic {
	out := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, o := range owned {
		if t, ok := topics.ConsumerTopic(o.Topic); ok {
			rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			rt.TopicID, rt.Partitions = t.ID, slices.Clone(o.Partitions)
			out = append(out, rt)
		}
	}
	return out
}

// classicMember is the classic member of g that memberID (and instanceID, when set)
// name, or the classic protocol's error.
func (g *ConsumerGroup) classicMember(memberID string, instanceID *string) (*consumerMember, int16) {
	m := g.members[memberID]
	if instanceID != nil {
		if s := g.members[g.static[*instanceID]]; s == nil {
			return nil, errUnknownMemberID
		} else if s.meta.MemberID != memberID {
			return nil, errFencedInstanceID
		}
	}
	if m == nil || m.meta.Classic == nil {
		return nil, errUnknownMemberID
	}
	return m, 0
}

// classicSyncToConsumer is a SyncGroup of group g, a consumer group: the member's
// current assignment.
func (s *Shard) classicSyncToConsumer(now time.Time, g *ConsumerGroup, req *kmsg.SyncGroupRequest, send func(kmsg.Response)) Effects {
	var b batch
	m, code := g.classicMember(req.MemberID, req.InstanceID)
	switch {
	case code != 0:
	case req.Generation != m.epoch:
		code = errIllegalGeneration
	case req.ProtocolType != nil && *req.ProtocolType != consumerProtocolType,
		req.Protocol != nil && !slices.ContainsFunc(m.meta.Classic.SupportedProtocols, func(p ClassicProtocol) bool { return p.Name == *req.Protocol }):
		code = errInconsistentProtocol
	}
	if code != 0 {
		b.reply(send, syncResponse(req.Version, code))
		return b.effects()
	}
	m.sessionDeadline = now.Add(m.sessionTimeout(g.cfg))
	m.classicDeadline = time.Time{}
	resp := syncResponse(req.Version, 0)
	resp.ProtocolType = kmsg.StringPtr(consumerProtocolType)
	name := m.meta.Classic.SupportedProtocols[0].Name
	if req.Protocol != nil {
		name = *req.Protocol
	}
	resp.Protocol = kmsg.StringPtr(name)
	resp.MemberAssignment = s.classicAssignmentOf(m)
	b.reply(send, resp)
	return b.effects()
}

// classicAssignmentOf is m's assigned partitions as a ConsumerProtocolAssignment, at
// the version of its first protocol's subscription.
func (s *Shard) classicAssignmentOf(m *consumerMember) []byte {
	var topics ConsumerTopics
	if s.cfg.ConsumerTopics != nil {
		topics = s.cfg.ConsumerTopics()
	}
	var meta []byte
	if ps := m.meta.Classic.SupportedProtocols; len(ps) > 0 {
		meta = ps[0].Metadata
	}
	return encodeClassicAssignment(m.assigned, m.meta.SubscribedTopicNames, meta, topics)
}

// classicHeartbeatToConsumer is a Heartbeat of group g, a consumer group.
func (s *Shard) classicHeartbeatToConsumer(now time.Time, g *ConsumerGroup, req *kmsg.HeartbeatRequest, send func(kmsg.Response)) Effects {
	var b batch
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.Version = req.Version
	m, code := g.classicMember(req.MemberID, req.InstanceID)
	switch {
	case code != 0:
	case req.Generation != m.epoch:
		code = errIllegalGeneration
	default:
		m.sessionDeadline = now.Add(m.sessionTimeout(g.cfg))
		if m.epoch < g.groupEpoch || m.state == MemberUnrevokedPartitions ||
			(m.state == MemberUnreleasedPartitions && !g.waitingOnUnreleased(m)) {
			code = errRebalanceInProgress
			if m.classicDeadline.IsZero() { // it must rejoin within its rebalance timeout
				m.classicDeadline = now.Add(ms(m.meta.RebalanceTimeoutMs))
			}
		}
	}
	resp.ErrorCode = code
	b.reply(send, resp)
	return b.effects()
}

// waitingOnUnreleased reports whether a partition of m's target that m does not have
// is still owned by another member.
func (g *ConsumerGroup) waitingOnUnreleased(m *consumerMember) bool {
	for t, ps := range g.target[m.meta.MemberID] {
		for _, p := range ps {
			if owner, ok := g.owners[consumerTP{t, p}]; ok && owner != m.meta.MemberID {
				return true
			}
		}
	}
	return false
}

// classicLeaveToConsumer is a LeaveGroup of group g, a consumer group: each classic
// member named leaves (an empty member id with an instance id removes that static
// member), bumping the group epoch.
func (s *Shard) classicLeaveToConsumer(now time.Time, g *ConsumerGroup, req *kmsg.LeaveGroupRequest, send func(kmsg.Response)) Effects {
	var b batch
	resp, members := leaveRequestMembers(req)
	var topics ConsumerTopics = ConsumerTopicMap{}
	if s.cfg.ConsumerTopics != nil {
		topics = s.cfg.ConsumerTopics()
	}
	var leaving []*consumerMember
	for _, lm := range members {
		id := lm.MemberID
		if id == "" && lm.InstanceID != nil {
			id = g.static[*lm.InstanceID]
		}
		m, code := g.classicMember(id, lm.InstanceID)
		if code == 0 && !slices.Contains(leaving, m) {
			leaving = append(leaving, m)
		}
		resp.Members = append(resp.Members, leaveMember(lm, code))
	}
	e := &emitter[ConsumerEvent]{apply: g.apply}
	ids := make([]string, len(leaving))
	for i, m := range leaving {
		ids[i] = m.meta.MemberID
	}
	if len(ids) == 0 || !s.downgrades(g, ids) || !s.downgrade(now, &b, g, ids, topics) { // consumer_migrate.go
		for _, m := range leaving {
			g.fence(e, m, topics)
		}
	}
	if req.Version < 3 {
		resp.ErrorCode = resp.Members[0].ErrorCode
		resp.Members = nil
	}
	var hbResp *kmsg.ConsumerGroupHeartbeatResponse
	if len(e.events) > 0 {
		hbResp = kmsg.NewPtrConsumerGroupHeartbeatResponse()
		s.persistConsumer(&b, g, e.events, hbResp)
		s.consumerRebalanced(g, e.events, now)
	}
	b.reply(func(kmsg.Response) {
		if hbResp != nil && hbResp.ErrorCode != 0 { // the write failed
			resp.ErrorCode, resp.Members = hbResp.ErrorCode, nil
		}
		send(resp)
	}, resp)
	return b.effects()
}

// classicOffsetCommitCode is how a consumer group checks an OffsetCommit (or
// TxnOffsetCommit) of one of its classic members (Kafka's
// ConsumerGroup.validateOffsetCommit for a member using the classic protocol): handled
// is false when memberID is not a classic member of g (the consumer-protocol checks
// apply); otherwise code is 0 when generation is the member's epoch, else
// ILLEGAL_GENERATION, or FENCED_INSTANCE_ID for a static member named by another id.
// The offset commit validation of consumer groups calls it first.
func (g *ConsumerGroup) classicOffsetCommitCode(memberID string, instanceID *string, generation int32) (handled bool, code int16) {
	m := g.members[memberID]
	if m == nil || m.meta.Classic == nil {
		return false, 0
	}
	if _, code := g.classicMember(memberID, instanceID); code != 0 {
		return true, code
	}
	if generation != m.epoch {
		return true, errIllegalGeneration
	}
	return true, 0
}
