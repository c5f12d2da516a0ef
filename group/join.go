package group

import (
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// newMemberJoinTimeoutMs is Kafka's group.classic.new.member.join.timeout (5 minutes):
// how long a new member's parked JoinGroup keeps it in the group.
const newMemberJoinTimeoutMs = 300000

func joinResponse(version int16, code int16, memberID string) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = version
	resp.ErrorCode = code
	resp.MemberID = memberID
	return resp
}

// joinGroup is JoinGroup (Kafka's GroupMetadataManager.classicGroupJoinToClassicGroup).
func (s *Shard) joinGroup(now time.Time, c Client, req *kmsg.JoinGroupRequest, send func(kmsg.Response)) Effects {
	var b batch
	if !validGroupID(req.Group) {
		b.reply(send, joinResponse(req.Version, errInvalidGroupID, req.MemberID))
		return b.effects()
	}
	if !joinFitsRecords(c, req) {
		b.reply(send, joinResponse(req.Version, errInvalidRequest, req.MemberID))
		return b.effects()
	}
	session := ms(req.SessionTimeoutMillis)
	if session < s.cfg.MinSessionTimeout || session > s.cfg.MaxSessionTimeout {
		b.reply(send, joinResponse(req.Version, errInvalidSessionTimeout, req.MemberID))
		return b.effects()
	}
	if s.shareGroups[req.Group] != nil { // share_shard.go: no conversion
		b.reply(send, joinResponse(req.Version, errInconsistentProtocol, req.MemberID))
		return b.effects()
	}
	if cg, ok := s.consumerGroups[req.Group]; ok {
		if cg.NumMembers() > 0 {
			return s.classicJoinToConsumer(now, c, cg, req, send) // consumer_classic.go
		}
		if !s.classicJoinOfEmptyConsumer(&b, cg) { // consumer_migrate.go
			b.reply(send, joinResponse(req.Version, errInconsistentProtocol, req.MemberID))
			return b.effects()
		}
	}
	rebalanceTimeoutMs := req.RebalanceTimeoutMillis
	if req.Version == 0 {
		rebalanceTimeoutMs = req.SessionTimeoutMillis
	}
	unknown := req.MemberID == ""
	g := s.groups[req.Group]
	created := false
	if g == nil {
		if !unknown {
			b.reply(send, joinResponse(req.Version, errUnknownMemberID, req.MemberID))
			return b.effects()
		}
		g = newGroup(req.Group, now)
		s.groups[req.Group] = g
		created = true
	}
	j := joinRequest{client: c, req: req, rebalanceTimeoutMs: rebalanceTimeoutMs, send: send}
	switch {
	case !s.acceptJoiningMember(g, req.MemberID):
		s.forget(&b, g, req.MemberID)
		b.reply(send, joinResponse(req.Version, errGroupMaxSizeReached, ""))
	case unknown:
		s.joinNewMember(now, &b, g, j)
	default:
		s.joinExistingMember(now, &b, g, j)
	}
	if created && len(g.members) == 0 && len(g.pending) == 0 && len(g.offsets) == 0 {
		delete(s.groups, g.id) // nothing joined: leave no trace of the group
	}
	return b.effects()
}

// joinRequest is a JoinGroup being handled.
type joinRequest struct {
	client             Client
	req                *kmsg.JoinGroupRequest
	rebalanceTimeoutMs int32
	send               func(kmsg.Response)
}

// acceptJoiningMember is Kafka's group.max.size rule.
func (s *Shard) acceptJoiningMember(g *group, memberID string) bool {
	if s.cfg.MaxSize <= 0 {
		return true
	}
	m, known := g.members[memberID]
	switch g.state {
	case statePreparingRebalance:
		return (known && m.awaitingJoin()) || g.numAwaitingJoin() < s.cfg.MaxSize
	case stateCompletingRebalance, stateStable:
		return known || len(g.members) < s.cfg.MaxSize
	default:
		return true
	}
}

// forget removes a member or pending member id and its session timer, without a rebalance.
func (s *Shard) forget(b *batch, g *group, memberID string) {
	if _, ok := g.members[memberID]; ok || g.pending[memberID] {
		b.cancel(heartbeatKey(g.id, memberID))
	}
	dropMember(b, g, memberID)
}

func (s *Shard) newMemberID(clientID string, instanceID *string) string {
	if instanceID != nil {
		return *instanceID + "-" + s.uuid()
	}
	return clientID + "-" + s.uuid()
}

func (s *Shard) joinNewMember(now time.Time, b *batch, g *group, j joinRequest) {
	req := j.req
	switch {
	case g.is(stateDead):
		b.reply(j.send, joinResponse(req.Version, errCoordinatorNotAvailable, ""))
	case !g.supportsProtocols(req.ProtocolType, req.Protocols):
		b.reply(j.send, joinResponse(req.Version, errInconsistentProtocol, ""))
	case req.InstanceID != nil:
		newID := s.newMemberID(j.client.ID, req.InstanceID)
		if oldID, ok := g.static[*req.InstanceID]; ok {
			s.updateStaticMember(now, b, g, j, oldID, newID)
		} else {
			s.addMemberThenRebalanceOrCompleteJoin(now, b, g, j, newID)
		}
	case req.Version >= 4:
		// KIP-394: the member must come back with the id it is given.
		newID := s.newMemberID(j.client.ID, nil)
		g.pending[newID] = true
		b.timer(heartbeatKey(g.id, newID), now.Add(ms(req.SessionTimeoutMillis)))
		b.reply(j.send, joinResponse(req.Version, errMemberIDRequired, newID))
	default:
		s.addMemberThenRebalanceOrCompleteJoin(now, b, g, j, s.newMemberID(j.client.ID, nil))
	}
}

func (s *Shard) joinExistingMember(now time.Time, b *batch, g *group, j joinRequest) {
	req := j.req
	memberID := req.MemberID
	if g.is(stateDead) {
		b.reply(j.send, joinResponse(req.Version, errCoordinatorNotAvailable, memberID))
		return
	}
	if !g.supportsProtocols(req.ProtocolType, req.Protocols) {
		b.reply(j.send, joinResponse(req.Version, errInconsistentProtocol, memberID))
		return
	}
	if g.pending[memberID] {
		if req.InstanceID != nil {
			// A pending member is never static: treat the id as unknown.
			b.reply(j.send, joinResponse(req.Version, errUnknownMemberID, memberID))
			return
		}
		s.addMemberThenRebalanceOrCompleteJoin(now, b, g, j, memberID)
		return
	}
	if code := g.validateMember(memberID, req.InstanceID); code != 0 {
		b.reply(j.send, joinResponse(req.Version, code, memberID))
		return
	}
	m := g.members[memberID]
	switch g.state {
	case statePreparingRebalance:
		s.updateMemberThenRebalanceOrCompleteJoin(now, b, g, m, j)
	case stateCompletingRebalance:
		if m.matches(req.Protocols) {
			// The same metadata: the member missed the JoinGroup response.
			b.reply(j.send, s.joinSuccess(g, m, req.Version, g.leader == memberID))
		} else {
			s.updateMemberThenRebalanceOrCompleteJoin(now, b, g, m, j)
		}
	case stateStable:
		if g.leader == memberID || !m.matches(req.Protocols) {
			// The leader rejoining forces a rebalance (topic metadata changes).
			s.updateMemberThenRebalanceOrCompleteJoin(now, b, g, m, j)
		} else {
			b.reply(j.send, s.joinSuccess(g, m, req.Version, false))
		}
	default:
		b.reply(j.send, joinResponse(req.Version, errUnknownMemberID, memberID))
	}
}

// joinSuccess is the JoinGroup response of the current generation; the leader's holds
// the members.
func (s *Shard) joinSuccess(g *group, m *member, version int16, withMembers bool) *kmsg.JoinGroupResponse {
	resp := joinResponse(version, 0, m.id)
	resp.Generation = g.generation
	resp.Protocol = g.protocolPtr()
	resp.ProtocolType = g.protocolTypePtr()
	resp.LeaderID = g.leader
	if withMembers {
		resp.Members = g.currentMembers()
	}
	return resp
}

// completeJoin answers a member's parked JoinGroup.
func completeJoin(b *batch, m *member, resp *kmsg.JoinGroupResponse) bool {
	if m.joinSend == nil {
		return false
	}
	resp.Version = m.joinVersion
	b.reply(m.joinSend, resp)
	m.joinSend = nil
	return true
}

// completeSync answers a member's parked SyncGroup.
func completeSync(b *batch, m *member, resp *kmsg.SyncGroupResponse) bool {
	if m.syncSend == nil {
		return false
	}
	resp.Version = m.syncVersion
	b.reply(m.syncSend, resp)
	m.syncSend = nil
	return true
}

// park records a member's JoinGroup as waiting; a JoinGroup it replaces is answered
// REBALANCE_IN_PROGRESS so that no request is left without a response.
func park(b *batch, m *member, j joinRequest) {
	if m.joinSend != nil {
		b.reply(m.joinSend, joinResponse(m.joinVersion, errRebalanceInProgress, m.id))
	}
	m.joinSend, m.joinVersion = j.send, j.req.Version
}

func (s *Shard) addMemberThenRebalanceOrCompleteJoin(now time.Time, b *batch, g *group, j joinRequest, memberID string) {
	req := j.req
	m := &member{
		id:                 memberID,
		instanceID:         req.InstanceID,
		clientID:           j.client.ID,
		clientHost:         j.client.Host,
		rebalanceTimeoutMs: j.rebalanceTimeoutMs,
		sessionTimeoutMs:   req.SessionTimeoutMillis,
		protocolType:       req.ProtocolType,
		protocols:          req.Protocols,
		isNew:              true,
	}
	if g.is(statePreparingRebalance) && g.previousState == stateEmpty {
		g.newMemberAdded = true
	}
	g.add(m)
	park(b, m, j)
	// A new member cannot heartbeat while its JoinGroup is parked: it is timed out after
	// the new-member join timeout instead (it retries if it is still there).
	b.timer(heartbeatKey(g.id, m.id), now.Add(ms(newMemberJoinTimeoutMs)))
	s.maybePrepareRebalanceOrCompleteJoin(now, b, g)
}

func (s *Shard) updateMemberThenRebalanceOrCompleteJoin(now time.Time, b *batch, g *group, m *member, j joinRequest) {
	g.setProtocols(m, j.req.Protocols)
	m.rebalanceTimeoutMs = j.rebalanceTimeoutMs
	m.sessionTimeoutMs = j.req.SessionTimeoutMillis
	park(b, m, j)
	s.maybePrepareRebalanceOrCompleteJoin(now, b, g)
}

// updateStaticMember handles a known static member rejoining with a new member id
// (KIP-345): the old id is fenced; a Stable group whose protocol would not change keeps
// its generation and the member its assignment.
func (s *Shard) updateStaticMember(now time.Time, b *batch, g *group, j joinRequest, oldID, newID string) {
	req := j.req
	currentLeader := g.leader
	m := s.replaceStaticMember(b, g, *req.InstanceID, oldID, newID)
	b.cancel(heartbeatKey(g.id, oldID))
	b.timer(heartbeatKey(g.id, newID), now.Add(ms(m.sessionTimeoutMs)))

	oldProtocols, oldRebalance, oldSession := m.protocols, m.rebalanceTimeoutMs, m.sessionTimeoutMs
	g.setProtocols(m, req.Protocols)
	m.rebalanceTimeoutMs = j.rebalanceTimeoutMs
	m.sessionTimeoutMs = req.SessionTimeoutMillis
	park(b, m, j)

	switch g.state {
	case stateStable:
		if g.protocol != g.selectProtocol() {
			s.maybePrepareRebalanceOrCompleteJoin(now, b, g)
			return
		}
		// Persist the new member id; answer once it is written.
		generation := g.generation
		epoch := s.epoch
		b.writeOnce(func(code int16) Effects {
			var out batch
			now := s.committedNow(now)
			if s.epoch != epoch {
				return out.effects()
			}
			if code != 0 {
				// Revert: the old member id stays the static member's.
				if cur, ok := g.members[newID]; ok && cur == m {
					g.setProtocols(m, oldProtocols)
					m.rebalanceTimeoutMs, m.sessionTimeoutMs = oldRebalance, oldSession
					send, version := m.joinSend, m.joinVersion
					m.joinSend = nil
					old := s.replaceStaticMember(&out, g, *req.InstanceID, newID, oldID)
					out.cancel(heartbeatKey(g.id, newID))
					out.timer(heartbeatKey(g.id, oldID), now.Add(ms(old.sessionTimeoutMs)))
					resp := joinResponse(version, code, "")
					resp.Generation = generation
					resp.Protocol = g.protocolPtr()
					resp.ProtocolType = g.protocolTypePtr()
					resp.LeaderID = currentLeader
					out.reply(send, resp)
				}
				return out.effects()
			}
			if cur, ok := g.members[newID]; ok && cur == m {
				version := m.joinVersion
				if version >= 9 {
					// KIP-814: the leader skips the assignment it already made.
					isLeader := g.leader == newID
					resp := s.joinSuccess(g, m, version, isLeader)
					resp.SkipAssignment = isLeader
					completeJoin(&out, m, resp)
				} else {
					resp := s.joinSuccess(g, m, version, false)
					resp.LeaderID = currentLeader
					completeJoin(&out, m, resp)
				}
			}
			return out.effects()
		}, s.groupMetadataRecord(g, nil))
	case stateCompletingRebalance:
		// The leader may have been sent the old member id: rebalance again.
		s.prepareRebalance(now, b, g)
	default:
		s.maybeCompleteJoinPhase(now, b, g)
	}
}

// replaceStaticMember moves a static member to a new member id, fencing requests parked
// under the old one with FENCED_INSTANCE_ID.
func (s *Shard) replaceStaticMember(b *batch, g *group, instanceID, oldID, newID string) *member {
	old := g.members[oldID]
	resp := joinResponse(old.joinVersion, errFencedInstanceID, oldID)
	completeJoin(b, old, resp)
	sresp := kmsg.NewPtrSyncGroupResponse()
	sresp.ErrorCode = errFencedInstanceID
	sresp.MemberAssignment = []byte{}
	completeSync(b, old, sresp)

	m := &member{
		id:                 newID,
		instanceID:         old.instanceID,
		clientID:           old.clientID,
		clientHost:         old.clientHost,
		rebalanceTimeoutMs: old.rebalanceTimeoutMs,
		sessionTimeoutMs:   old.sessionTimeoutMs,
		protocolType:       old.protocolType,
		protocols:          old.protocols,
		assignment:         old.assignment,
	}
	delete(g.members, oldID)
	g.members[newID] = m
	for i, id := range g.memberOrder {
		if id == oldID {
			g.memberOrder[i] = newID
		}
	}
	if g.leader == oldID {
		g.leader = newID
	}
	if g.pendingSync[oldID] {
		delete(g.pendingSync, oldID)
		g.pendingSync[newID] = true
	}
	g.static[instanceID] = newID
	return m
}

// canRebalance: PreparingRebalance may follow Stable, CompletingRebalance and Empty.
func (g *group) canRebalance() bool {
	return g.is(stateStable) || g.is(stateCompletingRebalance) || g.is(stateEmpty)
}

func (s *Shard) maybePrepareRebalanceOrCompleteJoin(now time.Time, b *batch, g *group) {
	if g.canRebalance() {
		s.prepareRebalance(now, b, g)
	} else {
		s.maybeCompleteJoinPhase(now, b, g)
	}
}

// prepareRebalance moves the group to PreparingRebalance: members awaiting sync are told
// REBALANCE_IN_PROGRESS; from Empty the join phase waits the initial rebalance delay.
func (s *Shard) prepareRebalance(now time.Time, b *batch, g *group) {
	if g.is(stateCompletingRebalance) {
		s.resetAndPropagateAssignmentWithError(now, b, g, errRebalanceInProgress)
	}
	b.cancel(syncKey(g.id))
	initial := g.is(stateEmpty)
	g.transitionTo(statePreparingRebalance, now)
	s.rebalanceBegan(g.id, now, initial)
	if initial {
		delay := int32(s.cfg.InitialRebalanceDelay / time.Millisecond)
		remaining := g.rebalanceTimeoutMs() - delay
		if remaining < 0 {
			remaining = 0
		}
		g.joinTimerInitial, g.initialDelayMs, g.initialRemaining = true, delay, remaining
		g.newMemberAdded = false
		b.timer(joinKey(g.id), now.Add(ms(delay)))
		return
	}
	s.maybeCompleteJoinElseSchedule(now, b, g)
}

func (s *Shard) maybeCompleteJoinElseSchedule(now time.Time, b *batch, g *group) {
	if g.hasAllMembersJoined() {
		s.completeJoin(now, b, g)
		return
	}
	g.joinTimerInitial = false
	b.timer(joinKey(g.id), now.Add(ms(g.rebalanceTimeoutMs())))
}

func (s *Shard) maybeCompleteJoinPhase(now time.Time, b *batch, g *group) {
	if g.is(statePreparingRebalance) && g.hasAllMembersJoined() && g.previousState != stateEmpty {
		s.completeJoin(now, b, g)
	}
}

// joinTimeout is the join timer's firing: the initial delay is extended while members
// arrive, else the join phase completes.
func (s *Shard) joinTimeout(now time.Time, b *batch, g *group) {
	if !g.is(statePreparingRebalance) {
		return
	}
	if g.joinTimerInitial && g.newMemberAdded && g.initialRemaining != 0 {
		g.newMemberAdded = false
		delay := g.initialDelayMs
		if g.initialRemaining < delay {
			delay = g.initialRemaining
		}
		remaining := g.initialRemaining - g.initialDelayMs
		if remaining < 0 {
			remaining = 0
		}
		g.initialDelayMs, g.initialRemaining = delay, remaining
		b.timer(joinKey(g.id), now.Add(ms(delay)))
		return
	}
	s.completeJoin(now, b, g)
}

// completeJoin ends the join phase: dynamic members that did not rejoin are removed, the
// next generation starts, and every parked JoinGroup is answered (an Empty group writes
// its metadata instead).
func (s *Shard) completeJoin(now time.Time, b *batch, g *group) {
	b.cancel(joinKey(g.id))
	g.joinTimerInitial = false
	for _, m := range g.all() {
		if !m.awaitingJoin() && m.instanceID == nil {
			dropMember(b, g, m.id)
			b.cancel(heartbeatKey(g.id, m.id))
		}
	}
	if g.is(stateDead) {
		return
	}
	if !s.maybeElectNewJoinedLeader(g) && len(g.members) > 0 {
		// No member rejoined: wait for the session timeouts to remove them.
		b.timer(joinKey(g.id), now.Add(ms(g.rebalanceTimeoutMs())))
		return
	}
	g.initNextGeneration(now)
	if g.is(stateEmpty) {
		b.write(nil, s.groupMetadataRecord(g, nil))
		return
	}
	for _, m := range g.all() {
		resp := s.joinSuccess(g, m, m.joinVersion, g.leader == m.id)
		completeJoin(b, m, resp)
		b.timer(heartbeatKey(g.id, m.id), now.Add(ms(m.sessionTimeoutMs)))
		m.isNew = false
		g.pendingSync[m.id] = true
	}
	g.syncTimerGeneration = g.generation
	b.timer(syncKey(g.id), now.Add(ms(g.rebalanceTimeoutMs())))
}

// maybeElectNewJoinedLeader keeps the leader if it rejoined, else takes the first member
// that did; false when none did.
func (s *Shard) maybeElectNewJoinedLeader(g *group) bool {
	if g.leader == "" {
		return false
	}
	if l := g.members[g.leader]; l != nil && l.awaitingJoin() {
		return true
	}
	for _, m := range g.all() {
		if m.awaitingJoin() {
			g.leader = m.id
			return true
		}
	}
	return false
}

// validGroupID: not empty, and short enough for the records' int16-length strings.
func validGroupID(id string) bool { return id != "" && len(id) <= math.MaxInt16 }

// memberIDSuffixRoom is what a generated member id adds to the client id or
// group.instance.id: "-" and a UUID (36 bytes).
const memberIDSuffixRoom = 1 + 36

// joinFitsRecords reports whether every string of a JoinGroup that the group metadata
// record stores fits its int16 length (flexible JoinGroup v6+ can carry longer ones):
// the client id and group.instance.id with room for the generated member id's suffix,
// the member id, the protocol type and names. A longer one would be stored cut and
// not match after a reload, so the request is refused (INVALID_REQUEST) instead.
func joinFitsRecords(c Client, req *kmsg.JoinGroupRequest) bool {
	if len(c.ID) > maxRecordString-memberIDSuffixRoom || !fitsRecord(c.Host) || !fitsRecord(req.MemberID) ||
		!fitsRecord(req.ProtocolType) {
		return false
	}
	if req.InstanceID != nil && len(*req.InstanceID) > maxRecordString-memberIDSuffixRoom {
		return false
	}
	for _, p := range req.Protocols {
		if !fitsRecord(p.Name) {
			return false
		}
	}
	return true
}
