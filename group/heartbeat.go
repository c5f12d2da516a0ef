package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// heartbeat is Heartbeat (Kafka's classicGroupHeartbeatToClassicGroup).
func (s *Shard) heartbeat(now time.Time, req *kmsg.HeartbeatRequest, send func(kmsg.Response)) Effects {
	var b batch
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.Version = req.Version
	resp.ErrorCode = s.heartbeatCode(now, &b, req)
	b.reply(send, resp)
	return b.effects()
}

func (s *Shard) heartbeatCode(now time.Time, b *batch, req *kmsg.HeartbeatRequest) int16 {
	if req.Group == "" {
		return errInvalidGroupID
	}
	g := s.groups[req.Group]
	if g == nil {
		return errUnknownMemberID
	}
	if g.is(stateDead) {
		return errCoordinatorNotAvailable
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		return code
	}
	if req.Generation != g.generation {
		return errIllegalGeneration
	}
	switch g.state {
	case stateEmpty:
		return errUnknownMemberID
	case statePreparingRebalance:
		s.rescheduleHeartbeat(now, b, g, g.members[req.MemberID])
		return errRebalanceInProgress
	default:
		s.rescheduleHeartbeat(now, b, g, g.members[req.MemberID])
		return 0
	}
}

func (s *Shard) rescheduleHeartbeat(now time.Time, b *batch, g *group, m *member) {
	if m != nil {
		b.timer(heartbeatKey(g.id, m.id), now.Add(ms(m.sessionTimeoutMs)))
	}
}

// heartbeatTimeout is a member's session timer firing.
func (s *Shard) heartbeatTimeout(now time.Time, b *batch, g *group, memberID string) {
	if g.is(stateDead) {
		return
	}
	if g.pending[memberID] {
		g.remove(memberID)
		if g.is(statePreparingRebalance) {
			s.maybeCompleteJoinPhase(now, b, g)
		}
		return
	}
	m := g.members[memberID]
	if m == nil {
		return
	}
	if !m.isNew && (m.awaitingJoin() || m.awaitingSync()) {
		return // a parked request keeps the member; its timer restarts when answered
	}
	s.removeMemberAndUpdateGroup(now, b, g, m)
}

// removeMemberAndUpdateGroup removes a failed member, answering a parked JoinGroup with
// UNKNOWN_MEMBER_ID (it retries if it is still alive), and rebalances.
func (s *Shard) removeMemberAndUpdateGroup(now time.Time, b *batch, g *group, m *member) {
	dropMember(b, g, m.id)
	switch {
	case g.is(stateStable) || g.is(stateCompletingRebalance):
		s.maybePrepareRebalanceOrCompleteJoin(now, b, g)
	case g.is(statePreparingRebalance) && g.hasAllMembersJoined():
		s.completeJoin(now, b, g)
	}
}

// leaveGroup is LeaveGroup (Kafka's classicGroupLeaveToClassicGroup); v0-2 carry one
// member and answer with its error at the top level.
func (s *Shard) leaveGroup(now time.Time, req *kmsg.LeaveGroupRequest, send func(kmsg.Response)) Effects {
	var b batch
	resp, members := leaveRequestMembers(req)
	g := s.groups[req.Group]
	switch {
	case req.Group == "":
		resp.ErrorCode = errInvalidGroupID
	case g == nil:
		for _, m := range members {
			resp.Members = append(resp.Members, leaveMember(m, errUnknownMemberID))
		}
	case g.is(stateDead):
		resp.ErrorCode = errCoordinatorNotAvailable
	default:
		left := 0
		for _, m := range members {
			code := s.leaveOne(&b, g, m)
			if code == 0 {
				left++
			}
			resp.Members = append(resp.Members, leaveMember(m, code))
		}
		if left > 0 {
			switch g.state {
			case stateStable, stateCompletingRebalance:
				s.maybePrepareRebalanceOrCompleteJoin(now, &b, g)
			case statePreparingRebalance:
				s.maybeCompleteJoinPhase(now, &b, g)
			}
		}
	}
	if req.Version < 3 {
		if resp.ErrorCode == 0 && len(resp.Members) == 1 {
			resp.ErrorCode = resp.Members[0].ErrorCode
		}
		resp.Members = nil
	}
	b.reply(send, resp)
	return b.effects()
}

// leaveRequestMembers is the response to req, to fill, and the members req names (the
// one member of a v0-2 request).
func leaveRequestMembers(req *kmsg.LeaveGroupRequest) (*kmsg.LeaveGroupResponse, []kmsg.LeaveGroupRequestMember) {
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.Version = req.Version
	members := req.Members
	if req.Version < 3 {
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = req.MemberID
		members = []kmsg.LeaveGroupRequestMember{m}
	}
	return resp, members
}

func leaveMember(m kmsg.LeaveGroupRequestMember, code int16) kmsg.LeaveGroupResponseMember {
	r := kmsg.NewLeaveGroupResponseMember()
	r.MemberID = m.MemberID
	r.InstanceID = m.InstanceID
	r.ErrorCode = code
	return r
}

// leaveOne removes one leaving member; an empty member id with a group.instance.id is an
// administrative removal of that static member.
func (s *Shard) leaveOne(b *batch, g *group, lm kmsg.LeaveGroupRequestMember) int16 {
	if lm.MemberID == "" {
		if lm.InstanceID == nil {
			return errUnknownMemberID
		}
		id, ok := g.static[*lm.InstanceID]
		if !ok {
			return errUnknownMemberID
		}
		s.removeCurrentMember(b, g, id)
		return 0
	}
	if g.pending[lm.MemberID] {
		g.remove(lm.MemberID)
		b.cancel(heartbeatKey(g.id, lm.MemberID))
		return 0
	}
	if code := g.validateMember(lm.MemberID, lm.InstanceID); code != 0 {
		return code
	}
	s.removeCurrentMember(b, g, lm.MemberID)
	return 0
}

func (s *Shard) removeCurrentMember(b *batch, g *group, memberID string) {
	b.cancel(heartbeatKey(g.id, memberID))
	dropMember(b, g, memberID)
}

// dropMember removes a member from the group, first answering its parked JoinGroup or
// SyncGroup with UNKNOWN_MEMBER_ID (it retries the JoinGroup if it is still alive): no
// request is left without a response.
func dropMember(b *batch, g *group, memberID string) {
	if m := g.members[memberID]; m != nil {
		completeJoin(b, m, joinResponse(m.joinVersion, errUnknownMemberID, ""))
		completeSync(b, m, syncResponse(m.syncVersion, errUnknownMemberID))
	}
	g.remove(memberID)
}

// timeout dispatches a timer's firing.
func (s *Shard) timeout(now time.Time, key string) Effects {
	var b batch
	kind, groupID, memberID := parseTimerKey(key)
	g := s.groups[groupID]
	if g == nil {
		return b.effects()
	}
	switch kind {
	case timerJoin:
		s.joinTimeout(now, &b, g)
	case timerSync:
		s.syncTimeout(now, &b, g)
	case timerHeartbeat:
		s.heartbeatTimeout(now, &b, g, memberID)
	}
	return b.effects()
}
