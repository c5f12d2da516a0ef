package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func syncResponse(version, code int16) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = version
	resp.ErrorCode = code
	return resp
}

// syncGroup is SyncGroup (Kafka's classicGroupSyncToClassicGroup).
func (s *Shard) syncGroup(now time.Time, req *kmsg.SyncGroupRequest, send func(kmsg.Response)) Effects {
	var b batch
	fail := func(code int16) Effects {
		b.reply(send, syncResponse(req.Version, code))
		return b.effects()
	}
	if req.Group == "" {
		return fail(errInvalidGroupID)
	}
	g := s.groups[req.Group]
	if g == nil || len(g.members) == 0 {
		return fail(errUnknownMemberID)
	}
	if code := validateSync(g, req); code != 0 {
		return fail(code)
	}
	switch g.state {
	case statePreparingRebalance:
		return fail(errRebalanceInProgress)
	case stateCompletingRebalance:
		m := g.members[req.MemberID]
		if m.syncSend != nil {
			// A repeated SyncGroup replaces the parked one, which is answered now.
			b.reply(m.syncSend, syncResponse(m.syncVersion, errRebalanceInProgress))
		}
		m.syncSend, m.syncVersion = send, req.Version
		s.removePendingSyncMember(&b, g, req.MemberID)
		if g.leader == req.MemberID {
			s.storeLeaderAssignment(now, &b, g, req)
		}
	case stateStable:
		s.removePendingSyncMember(&b, g, req.MemberID)
		m := g.members[req.MemberID]
		resp := syncResponse(req.Version, 0)
		resp.ProtocolType = g.protocolTypePtr()
		resp.Protocol = g.protocolPtr()
		resp.MemberAssignment = m.assignment
		b.reply(send, resp)
	}
	return b.effects()
}

// validateSync is Kafka's validateSyncGroup.
func validateSync(g *group, req *kmsg.SyncGroupRequest) int16 {
	if g.is(stateDead) {
		return errCoordinatorNotAvailable
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		return code
	}
	if req.Generation != g.generation {
		return errIllegalGeneration
	}
	if inconsistent(req.ProtocolType, g.protocolType) || inconsistent(req.Protocol, g.protocol) {
		return errInconsistentProtocol
	}
	return 0
}

func inconsistent(requested *string, current string) bool {
	return requested != nil && current != "" && *requested != current
}

// storeLeaderAssignment writes the leader's assignment; once it is committed the group is
// Stable and every parked SyncGroup gets its member's assignment.
func (s *Shard) storeLeaderAssignment(now time.Time, b *batch, g *group, req *kmsg.SyncGroupRequest) {
	assignment := make(map[string][]byte, len(g.members))
	for _, a := range req.GroupAssignment {
		if _, ok := g.members[a.MemberID]; ok {
			assignment[a.MemberID] = a.MemberAssignment
		}
	}
	for id := range g.members {
		if _, ok := assignment[id]; !ok {
			assignment[id] = []byte{}
		}
	}
	generation := req.Generation
	epoch := s.epoch
	b.writeOnce(func(code int16) Effects {
		var out batch
		now := s.committedNow(now)
		if s.epoch != epoch || !g.is(stateCompletingRebalance) || g.generation != generation {
			return out.effects()
		}
		if code != 0 {
			s.resetAndPropagateAssignmentWithError(now, &out, g, code)
			s.maybePrepareRebalanceOrCompleteJoin(now, &out, g)
			return out.effects()
		}
		for id, m := range g.members {
			m.assignment = assignment[id]
		}
		s.propagateAssignment(now, &out, g, 0)
		g.transitionTo(stateStable, now)
		s.rebalanceCompleted(g.id, GroupTypeClassic, now)
		return out.effects()
	}, s.groupMetadataRecord(g, assignment))
}

func (s *Shard) removePendingSyncMember(b *batch, g *group, memberID string) {
	delete(g.pendingSync, memberID)
	if (g.is(stateCompletingRebalance) || g.is(stateStable)) && len(g.pendingSync) == 0 {
		b.cancel(syncKey(g.id))
	}
}

func (s *Shard) resetAndPropagateAssignmentWithError(now time.Time, b *batch, g *group, code int16) {
	for _, m := range g.members {
		m.assignment = []byte{}
	}
	s.propagateAssignment(now, b, g, code)
}

// propagateAssignment answers every parked SyncGroup; a member answered without error
// restarts its session timer.
func (s *Shard) propagateAssignment(now time.Time, b *batch, g *group, code int16) {
	for _, m := range g.all() {
		resp := syncResponse(m.syncVersion, code)
		if code == 0 {
			resp.ProtocolType = g.protocolTypePtr()
			resp.Protocol = g.protocolPtr()
		}
		resp.MemberAssignment = m.assignment
		if resp.MemberAssignment == nil {
			resp.MemberAssignment = []byte{}
		}
		if completeSync(b, m, resp) && code == 0 {
			b.timer(heartbeatKey(g.id, m.id), now.Add(ms(m.sessionTimeoutMs)))
		}
	}
}

// syncTimeout is the sync timer's firing: members of the generation that have not sent
// SyncGroup within the rebalance timeout are removed and the group rebalances
// (KAFKA-12890).
func (s *Shard) syncTimeout(now time.Time, b *batch, g *group) {
	if g.generation != g.syncTimerGeneration {
		return
	}
	if !(g.is(stateCompletingRebalance) || g.is(stateStable)) || len(g.pendingSync) == 0 {
		return
	}
	for id := range g.pendingSync {
		dropMember(b, g, id)
		b.cancel(heartbeatKey(g.id, id))
	}
	s.prepareRebalance(now, b, g)
}
