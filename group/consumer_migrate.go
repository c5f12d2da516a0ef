package group

// Online migration between the classic protocol and KIP-848 consumer groups, as Kafka
// 4.2's group.consumer.migration.policy (GroupMetadataManager.validateOnlineUpgrade,
// convertToConsumerGroup and ConsumerGroup.fromClassicGroup):
//
//   - A ConsumerGroupHeartbeat naming an EMPTY classic group (whatever its protocol
//     type) replaces it with a new consumer group, whatever the policy (Kafka's
//     maybeDeleteEmptyClassicGroup): the classic group metadata record is tombstoned,
//     the committed offsets stay.
//   - One naming a classic group with members is an online upgrade when the policy
//     allows upgrades, the group's protocol type is "consumer" and it has no more
//     members than group.consumer.max.size: every classic member becomes a member of
//     the new consumer group, at the group's generation as member epoch, Stable, its
//     subscription read from its JoinGroup metadata (ConsumerProtocolSubscription) and
//     its assignment, which is also its target, from its SyncGroup assignment
//     (ConsumerProtocolAssignment); the group epoch and target epoch are the
//     generation. The records, in one batch: the classic group metadata tombstone, the
//     new group's records (members' metadata carrying their ClassicMemberMetadata,
//     epoch, target, current assignments), then the joining heartbeat's own. Parked
//     JoinGroup and SyncGroup requests are answered REBALANCE_IN_PROGRESS.
//
// Otherwise the heartbeat gets GROUP_ID_NOT_FOUND "Group g is not a consumer group.".
// A heartbeat that fails (an unknown member, ...) leaves the classic group as it was.
//
// The reverse, downgrade, is described with downgrade below. A write of either that
// fails is stated again first in the group's next write (classicRetired,
// retiredConsumers), so that the log never holds one type's records after the other's.

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// MigrationPolicy is group.consumer.migration.policy: which online conversions between
// classic and consumer groups with members are allowed. The zero value is Kafka's
// default, bidirectional.
type MigrationPolicy int8

// The migration policies.
const (
	MigrationBidirectional MigrationPolicy = iota
	MigrationUpgrade
	MigrationDowngrade
	MigrationDisabled
)

// ParseMigrationPolicy reads a group.consumer.migration.policy value (case
// insensitive); ok is false for an unknown one.
func ParseMigrationPolicy(s string) (p MigrationPolicy, ok bool) {
	switch strings.ToLower(s) {
	case "bidirectional":
		return MigrationBidirectional, true
	case "upgrade":
		return MigrationUpgrade, true
	case "downgrade":
		return MigrationDowngrade, true
	case "disabled":
		return MigrationDisabled, true
	}
	return MigrationBidirectional, false
}

// String is the policy's value as Kafka prints it.
func (p MigrationPolicy) String() string {
	return [...]string{"bidirectional", "upgrade", "downgrade", "disabled"}[p]
}

// Upgrades reports whether a classic group with members may become a consumer group.
func (p MigrationPolicy) Upgrades() bool { return p == MigrationBidirectional || p == MigrationUpgrade }

// Downgrades reports whether a consumer group with members may become a classic group.
func (p MigrationPolicy) Downgrades() bool {
	return p == MigrationBidirectional || p == MigrationDowngrade
}

func notConsumerGroup(id string) *hbError {
	return hbErrorf(kerr.GroupIDNotFound, "Group %s is not a consumer group.", id)
}

// classicToConsumer is the consumer group a ConsumerGroupHeartbeat at now makes of the
// classic group cg (see the file comment), with the events stating it; nothing of the
// shard changes (retireClassic does, once the heartbeat succeeded).
func (s *Shard) classicToConsumer(cg *group, now time.Time, topics ConsumerTopics) (*ConsumerGroup, []ConsumerEvent, *hbError) {
	g := NewConsumerGroup(cg.id, s.consumerConfig(cg.id))
	if len(cg.members) == 0 {
		return g, nil, nil
	}
	if !s.cfg.MigrationPolicy.Upgrades() || cg.protocolType != consumerProtocolType ||
		(s.cfg.Consumer.MaxSize > 0 && len(cg.members) > s.cfg.Consumer.MaxSize) {
		return nil, nil, notConsumerGroup(cg.id)
	}
	malformed := hbErrorf(kerr.GroupIDNotFound, "Cannot upgrade the classic group %s to consumer group because "+
		"the embedded consumer protocol is malformed.", cg.id)
	var metas, assigns []ConsumerEvent
	target := ConsumerTargetAssignmentChanged{Epoch: cg.generation}
	taken := map[consumerTP]bool{}
	members := cg.all()
	slices.SortFunc(members, func(a, b *member) int { return strings.Compare(a.id, b.id) })
	for _, m := range members {
		meta := m.metadata(cg.protocol)
		if cg.protocol == "" && len(m.protocols) > 0 { // no generation yet: any of its protocols
			meta = m.protocols[0].Metadata
		}
		var sub kmsg.ConsumerMemberMetadata
		if err := sub.ReadFrom(meta); err != nil {
			return nil, nil, malformed
		}
		assigned, ok := classicAssignment(m.assignment, topics, taken)
		if !ok {
			return nil, nil, malformed
		}
		metas = append(metas, classicMemberMeta(m, sub))
		target.Members = append(target.Members, ConsumerTargetMember{MemberID: m.id, Partitions: assigned})
		assigns = append(assigns, ConsumerMemberAssignmentChanged{MemberID: m.id, MemberEpoch: cg.generation,
			PreviousMemberEpoch: cg.generation, State: MemberStable, Assigned: assigned, PendingRevocation: AssignedPartitions{}})
	}
	// Kafka writes the epoch with a zero metadata hash: the next heartbeat computes it.
	events := append(metas, ConsumerGroupEpochBumped{Epoch: cg.generation})
	events = append(events, target)
	events = append(events, assigns...)
	for _, ev := range events {
		g.apply(ev)
	}
	for _, m := range g.members {
		m.sessionDeadline = now.Add(m.sessionTimeout(g.cfg))
	}
	return g, events, nil
}

// classicMemberMeta is the consumer group metadata of classic member m, subscribed as
// sub says.
func classicMemberMeta(m *member, sub kmsg.ConsumerMemberMetadata) ConsumerMemberUpdated {
	names := slices.Clone(sub.Topics)
	slices.Sort(names)
	meta := ConsumerMemberUpdated{
		MemberID:             m.id,
		InstanceID:           optionalValue(m.instanceID),
		RackID:               optionalValue(sub.Rack),
		ClientID:             m.clientID,
		ClientHost:           m.clientHost,
		SubscribedTopicNames: slices.Compact(names),
		RebalanceTimeoutMs:   m.rebalanceTimeoutMs,
		Classic:              &ClassicMemberMetadata{SessionTimeoutMs: m.sessionTimeoutMs},
	}
	for _, p := range m.protocols {
		meta.Classic.SupportedProtocols = append(meta.Classic.SupportedProtocols,
			ClassicProtocol{Name: p.Name, Metadata: slices.Clone(p.Metadata)})
	}
	return meta
}

// classicAssignment reads a ConsumerProtocolAssignment into partitions by topic id:
// topics the image does not know are left out (as Kafka's topicPartitionMapFromList),
// and so is a partition already in taken (a classic leader may assign one twice; a
// consumer group never has two owners of a partition), which it adds the others to.
// Empty bytes are no partitions; ok is false for bytes that do not parse.
func classicAssignment(b []byte, topics ConsumerTopics, taken map[consumerTP]bool) (AssignedPartitions, bool) {
	out := AssignedPartitions{}
	if len(b) == 0 {
		return out, true
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(b); err != nil {
		return nil, false
	}
	for _, t := range a.Topics {
		info, known := topics.ConsumerTopic(t.Topic)
		if !known {
			continue
		}
		for _, p := range t.Partitions {
			tp := consumerTP{info.ID, p}
			if !taken[tp] {
				taken[tp] = true
				out[info.ID] = append(out[info.ID], p)
			}
		}
	}
	return normalizeAssignment(out), true
}

// retireClassic ends classic group cg, which a consumer group replaces at now: its
// parked JoinGroup and SyncGroup requests get REBALANCE_IN_PROGRESS, its timers stop,
// its classic state goes (the committed offsets stay), and its group metadata record is
// tombstoned, first in b.
func (s *Shard) retireClassic(b *batch, cg *group) {
	for _, m := range cg.all() {
		if m.awaitingJoin() {
			completeJoin(b, m, joinResponse(m.joinVersion, errRebalanceInProgress, m.id))
		}
		if m.awaitingSync() {
			completeSync(b, m, syncResponse(m.syncVersion, errRebalanceInProgress))
		}
		b.cancel(heartbeatKey(cg.id, m.id))
	}
	for id := range cg.pending {
		b.cancel(heartbeatKey(cg.id, id))
	}
	b.cancel(joinKey(cg.id))
	b.cancel(syncKey(cg.id))
	delete(s.rebalanceStarts, cg.id)
	s.dropClassicState(cg)
	s.writeClassicTombstone(b, cg.id)
}

// writeClassicTombstone adds the group metadata tombstone of id, a classic group a
// consumer group replaced, to b; if the write fails, the consumer group's next write
// carries it again (rewriteClassicTombstone), so that the log never holds the classic
// group's record after the consumer group's.
func (s *Shard) writeClassicTombstone(b *batch, id string) {
	epoch := s.epoch
	b.write(func(code int16) Effects {
		if code != 0 && s.epoch == epoch {
			s.classicRetired[id] = true
		}
		return Effects{}
	}, groupMetadataTombstone(id))
}

// rewriteClassicTombstone writes again the group metadata tombstone of group id whose
// write failed.
func (s *Shard) rewriteClassicTombstone(b *batch, id string) {
	if s.classicRetired[id] {
		delete(s.classicRetired, id)
		s.writeClassicTombstone(b, id)
	}
}

// dropClassicState makes cg the simple group holding its committed offsets, or removes
// it when it holds none: what the replay of its group metadata tombstone does.
func (s *Shard) dropClassicState(cg *group) {
	if len(cg.offsets) == 0 && len(cg.pendingOffsets) == 0 {
		delete(s.groups, cg.id)
		return
	}
	// A fresh group (newGroup) keeping only the offsets and their timestamp, so that no
	// classic field (the initial-delay and timer ones included) outlives the drop.
	offsets, pending, ts := cg.offsets, cg.pendingOffsets, cg.stateTimestampMs
	*cg = *newGroup(cg.id, time.Time{})
	cg.offsets, cg.pendingOffsets, cg.stateTimestampMs = offsets, pending, ts
}

// sessionTimeout is the member's session timeout: a classic member's own (its
// JoinGroup's), else the group's.
func (m *consumerMember) sessionTimeout(cfg ConsumerConfig) time.Duration {
	if m.meta.Classic != nil {
		return ms(m.meta.Classic.SessionTimeoutMs)
	}
	return cfg.SessionTimeout
}

func classicMetaEqual(a, b *ClassicMemberMetadata) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.SessionTimeoutMs == b.SessionTimeoutMs && slices.EqualFunc(a.SupportedProtocols, b.SupportedProtocols,
		func(x, y ClassicProtocol) bool { return x.Name == y.Name && string(x.Metadata) == string(y.Metadata) })
}

// Downgrade (Kafka's validateOnlineDowngradeWithFencedMembers, convertToClassicGroup
// and ClassicGroup.fromConsumerGroup): when members leave a consumer group (a
// ConsumerGroupHeartbeat leave, a LeaveGroup, an expiry) and the members that stay
// all use the classic protocol, the policy allows downgrades and they are no more than
// group.max.size, the group becomes a classic group of those members, at the group
// epoch as generation, each assigned its target (as a ConsumerProtocolAssignment of
// the version of its subscription); the records are the consumer group's tombstones
// then the classic group metadata record, in one batch; then the classic group
// prepares a rebalance, which its members learn from their next Heartbeat. An empty
// consumer group that a classic member joins is deleted (its tombstones) whatever the
// policy, and the join proceeds as for a new classic group.

// downgrades reports whether consumer group g becomes a classic group once the members
// leaving are gone.
func (s *Shard) downgrades(g *ConsumerGroup, leaving []string) bool {
	if !s.cfg.MigrationPolicy.Downgrades() {
		return false
	}
	stay := 0
	for id, m := range g.members {
		if slices.Contains(leaving, id) {
			continue
		}
		if m.meta.Classic == nil {
			return false
		}
		stay++
	}
	return stay > 0 && (s.cfg.MaxSize <= 0 || stay <= s.cfg.MaxSize)
}

// expiring is the members of g that Expire at now would remove.
func (g *ConsumerGroup) expiring(now time.Time) []string {
	var out []string
	for _, m := range g.sortedMembers() {
		if g.expired(m, now) {
			out = append(out, m.meta.MemberID)
		}
	}
	return out
}

// downgrade replaces consumer group g with the classic group of its members but
// leaving, at now (see above; downgrades said so), adding the records and the
// rebalance to b. False, with nothing changed, if the records cannot be encoded.
func (s *Shard) downgrade(now time.Time, b *batch, g *ConsumerGroup, leaving []string, topics ConsumerTopics) bool {
	r, ok := s.retireConsumer(g)
	if !ok {
		return false
	}
	cg := s.groups[g.id] // the holder of the offsets, if any
	if cg == nil {
		cg = newGroup(g.id, now)
		s.groups[g.id] = cg
	}
	cg.generation, cg.protocolType = g.groupEpoch, consumerProtocolType
	cg.transitionTo(stateStable, now)
	for _, cm := range g.sortedMembers() {
		if slices.Contains(leaving, cm.meta.MemberID) {
			continue
		}
		m := &member{id: cm.meta.MemberID, clientID: cm.meta.ClientID, clientHost: cm.meta.ClientHost,
			rebalanceTimeoutMs: cm.meta.RebalanceTimeoutMs, sessionTimeoutMs: cm.meta.Classic.SessionTimeoutMs,
			protocolType: consumerProtocolType}
		if cm.meta.InstanceID != "" {
			m.instanceID = kmsg.StringPtr(cm.meta.InstanceID)
		}
		for _, p := range cm.meta.Classic.SupportedProtocols {
			m.protocols = append(m.protocols, kmsg.JoinGroupRequestProtocol{Name: p.Name, Metadata: p.Metadata})
		}
		cg.add(m)
	}
	cg.protocol = cg.selectProtocol()
	cg.computeSubscribedTopics()
	for _, m := range cg.all() {
		cm := g.members[m.id]
		m.assignment = encodeClassicAssignment(g.target[m.id], cm.meta.SubscribedTopicNames, m.metadata(cg.protocol), topics)
		b.timer(heartbeatKey(cg.id, m.id), now.Add(ms(m.sessionTimeoutMs)))
	}
	s.writeRetiredConsumer(b, r, s.groupMetadataRecord(cg, nil))
	s.prepareRebalance(now, b, cg)
	return true
}

// retiredConsumer is a consumer group being replaced by a classic group (or deleted
// for one), as its tombstones must state it if their write fails.
type retiredConsumer struct {
	group      *ConsumerGroup
	dirty      map[string]bool
	dirtyRx    []string
	legacy     bool
	tombstones []Record
}

// retireConsumer takes consumer group g out of the shard, returning what its
// tombstones' write needs; ok is false, with nothing changed, if they cannot be
// encoded.
func (s *Shard) retireConsumer(g *ConsumerGroup) (r retiredConsumer, ok bool) {
	dirtyRx := s.takeDirtyRegexes(g.id)
	records, err := s.consumerGroupRemoval(g, dirtyRx)
	if err != nil { // not reached: the strings were stored once
		s.markRegexesDirty(g.id, dirtyRx)
		return r, false
	}
	r = retiredConsumer{group: g, dirty: s.consumerDirty[g.id], dirtyRx: dirtyRx, legacy: s.consumerLegacyMetadata[g.id], tombstones: records}
	s.forgetConsumerGroup(g.id)
	return r, true
}

// writeRetiredConsumer writes r's tombstones, then then (a classic group's record, if
// any). If the write fails while the shard stays loaded, the tombstones go first in
// the group id's next write (rewriteRetiredConsumer), so that the log never keeps the
// consumer group's records after a classic group's; if a consumer group of the id
// started since, it resyncs instead, tombstoning what the old one left.
func (s *Shard) writeRetiredConsumer(b *batch, r retiredConsumer, then ...Record) {
	epoch := s.epoch
	id := r.group.id
	b.write(func(code int16) Effects {
		if code == 0 || s.epoch != epoch {
			return Effects{}
		}
		if s.consumerGroups[id] != nil {
			dirty := maps.Clone(r.dirty)
			if dirty == nil {
				dirty = map[string]bool{}
			}
			for _, m := range r.group.MemberIDs() {
				dirty[m] = true
			}
			s.inheritFailedDeletion(r.group, dirty, r.dirtyRx, r.legacy)
			return Effects{}
		}
		if s.retiredConsumers == nil {
			s.retiredConsumers = map[string]retiredConsumer{}
		}
		s.retiredConsumers[id] = r
		return Effects{}
	}, append(slices.Clone(r.tombstones), then...)...)
}

// rewriteRetiredConsumer writes again, first in b, the tombstones of the consumer group
// id whose write failed.
func (s *Shard) rewriteRetiredConsumer(b *batch, id string) {
	if r, ok := s.retiredConsumers[id]; ok {
		delete(s.retiredConsumers, id)
		s.writeRetiredConsumer(b, r)
	}
}

// withRetiredConsumer is e preceded by the tombstones of consumer group id whose write
// failed, if any: for the classic requests, whose writes state the classic group.
func (s *Shard) withRetiredConsumer(id string, e Effects) Effects {
	if _, ok := s.retiredConsumers[id]; !ok {
		return e
	}
	var b batch
	s.rewriteRetiredConsumer(&b, id)
	b.merge(e)
	return b.effects()
}

// encodeClassicAssignment is a as a ConsumerProtocolAssignment, at the version of the
// subscription bytes meta (at most 3), its topics named by looking names (the member's
// subscribed topics) up in topics.
func encodeClassicAssignment(a AssignedPartitions, names []string, meta []byte, topics ConsumerTopics) []byte {
	out := kmsg.NewConsumerMemberAssignment()
	if len(meta) >= 2 {
		out.Version = max(0, min(int16(meta[0])<<8|int16(meta[1]), 3))
	}
	if topics != nil {
		for _, name := range names {
			t, ok := topics.ConsumerTopic(name)
			if ps := a[t.ID]; ok && len(ps) > 0 {
				out.Topics = append(out.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: name, Partitions: slices.Clone(ps)})
			}
		}
	}
	return out.AppendTo(nil)
}

// classicJoinOfEmptyConsumer deletes the empty consumer group g that a classic member
// joins, writing its tombstones to b (Kafka's maybeDeleteEmptyConsumerGroup).
func (s *Shard) classicJoinOfEmptyConsumer(b *batch, g *ConsumerGroup) bool {
	r, ok := s.retireConsumer(g)
	if ok {
		s.writeRetiredConsumer(b, r)
	}
	return ok
}

// forgetConsumerGroup drops consumer group id from the shard (its records are being
// tombstoned).
func (s *Shard) forgetConsumerGroup(id string) {
	delete(s.consumerGroups, id)
	delete(s.consumerDirty, id)
	delete(s.consumerLegacyMetadata, id)
	delete(s.rebalanceStarts, id)
}

// leaveDowngrades handles a ConsumerGroupHeartbeat leave (epoch -1) of group g whose
// members that stay all use the classic protocol: the downgrade, and the leave's
// response. False when the leave is not such a one.
func (s *Shard) leaveDowngrades(now time.Time, b *batch, g *ConsumerGroup, req *kmsg.ConsumerGroupHeartbeatRequest, topics ConsumerTopics, send func(kmsg.Response)) bool {
	m := g.members[req.MemberID]
	if req.MemberEpoch != LeaveMemberEpoch || m == nil || (req.InstanceID != nil && *req.InstanceID != m.meta.InstanceID) ||
		!s.downgrades(g, []string{req.MemberID}) || !s.downgrade(now, b, g, []string{req.MemberID}, topics) {
		return false
	}
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.Version = req.Version
	resp.MemberID = kmsg.StringPtr(req.MemberID)
	resp.MemberEpoch = LeaveMemberEpoch
	b.reply(send, resp)
	return true
}
