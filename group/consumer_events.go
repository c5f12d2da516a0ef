package group

// The state changes of a consumer group, as typed events. Each one is what one (or,
// for ConsumerMemberRemoved, three) of Kafka's KIP-848 __consumer_offsets records
// carries; the caller persists them in order, and Replay applies them back when the
// partition is loaded. Heartbeat and Expire change the group only by applying the
// events they return.

import "slices"

// ConsumerEvent is a persistent change of a consumer group: one of
// ConsumerMemberUpdated, ConsumerGroupEpochBumped, ConsumerTargetAssignmentChanged,
// ConsumerMemberAssignmentChanged, ConsumerMemberRemoved,
// ConsumerRegularExpressionResolved, ConsumerRegularExpressionRemoved
// (consumer_regex.go).
type ConsumerEvent interface {
	consumerEvent()
}

// ConsumerMemberUpdated is a member's metadata, new or changed: Kafka's
// ConsumerGroupMemberMetadataKey/Value.
type ConsumerMemberUpdated struct {
	MemberID string
	// InstanceID is the static member's group.instance.id; "" for a dynamic member.
	InstanceID string
	// RackID is the client's client.rack; "" when unset.
	RackID     string
	ClientID   string
	ClientHost string
	// SubscribedTopicNames is sorted and de-duplicated.
	SubscribedTopicNames []string
	// SubscribedTopicRegex is the member's regular expression subscription
	// (consumer_regex.go); "" none.
	SubscribedTopicRegex string
	// ServerAssignor is the assignor the member asked for; "" the group's default.
	ServerAssignor     string
	RebalanceTimeoutMs int32
	// Classic is set for a member of the classic protocol (JoinGroup, SyncGroup,
	// Heartbeat, LeaveGroup; consumer_migrate.go): its session timeout and JoinGroup
	// protocols. Shared, never changed in place.
	Classic *ClassicMemberMetadata
}

// ConsumerGroupEpochBumped is a new group epoch: Kafka's ConsumerGroupMetadataKey/Value.
// MetadataHash digests the subscribed topics' metadata (ids, names, partition counts)
// the epoch was computed with; it is this package's digest, not Kafka's murmur3 one,
// and only compared with itself.
type ConsumerGroupEpochBumped struct {
	Epoch        int32
	MetadataHash int64
}

// ConsumerTargetAssignmentChanged is a new target assignment at Epoch: Kafka's
// ConsumerGroupTargetAssignmentMember records (one per entry of Members, the members
// whose target changed, in member id order) followed by the
// ConsumerGroupTargetAssignmentMetadata record holding Epoch.
type ConsumerTargetAssignmentChanged struct {
	Epoch   int32
	Members []ConsumerTargetMember
}

// ConsumerTargetMember is one member's target assignment.
type ConsumerTargetMember struct {
	MemberID   string
	Partitions AssignedPartitions
}

// ConsumerMemberAssignmentChanged is a member's current assignment: Kafka's
// ConsumerGroupCurrentMemberAssignmentKey/Value.
type ConsumerMemberAssignmentChanged struct {
	MemberID                         string
	MemberEpoch, PreviousMemberEpoch int32
	State                            ConsumerMemberState
	Assigned, PendingRevocation      AssignedPartitions
}

// ConsumerMemberRemoved removes a member: Kafka's tombstones of its current assignment,
// target assignment and member metadata records, in that order.
type ConsumerMemberRemoved struct {
	MemberID string
}

func (ConsumerMemberUpdated) consumerEvent()           {}
func (ConsumerGroupEpochBumped) consumerEvent()        {}
func (ConsumerTargetAssignmentChanged) consumerEvent() {}
func (ConsumerMemberAssignmentChanged) consumerEvent() {}
func (ConsumerMemberRemoved) consumerEvent()           {}

// Replay applies an event read back from __consumer_offsets (Kafka's
// GroupMetadataManager.replay for the KIP-848 records). Timers are not persisted: after
// the load, StartTimers starts every member's session (and pending revocation) timer.
// Replay tolerates the orders Kafka writes in: an assignment or target record of a
// member whose metadata record comes later creates the member.
func (g *ConsumerGroup) Replay(ev ConsumerEvent) {
	g.apply(ev)
}

// apply changes the group by one event.
func (g *ConsumerGroup) apply(ev ConsumerEvent) {
	switch e := ev.(type) {
	case ConsumerMemberUpdated:
		m := g.memberForReplay(e.MemberID)
		if old := m.meta.InstanceID; old != "" && old != e.InstanceID && g.static[old] == e.MemberID {
			delete(g.static, old)
		}
		countSubscriptions(g.subscribed, m.meta.SubscribedTopicNames, -1)
		g.countRegex(m.meta.SubscribedTopicRegex, -1)
		m.meta = e
		m.meta.SubscribedTopicNames = slices.Clone(e.SubscribedTopicNames)
		countSubscriptions(g.subscribed, m.meta.SubscribedTopicNames, 1)
		g.countRegex(m.meta.SubscribedTopicRegex, 1)
		if e.InstanceID != "" {
			g.static[e.InstanceID] = e.MemberID
		}
	case ConsumerGroupEpochBumped:
		g.groupEpoch = e.Epoch
		g.metadataHash = e.MetadataHash
	case ConsumerTargetAssignmentChanged:
		g.targetEpoch = applyTarget(g.target, e)
	case ConsumerMemberAssignmentChanged:
		m := g.memberForReplay(e.MemberID)
		g.disown(m)
		m.epoch, m.previousEpoch, m.state = e.MemberEpoch, e.PreviousMemberEpoch, e.State
		m.assigned = normalizeAssignment(e.Assigned)
		m.pending = normalizeAssignment(e.PendingRevocation)
		g.own(m)
	case ConsumerMemberRemoved:
		m, ok := g.members[e.MemberID]
		if !ok {
			delete(g.target, e.MemberID)
			return
		}
		g.disown(m)
		countSubscriptions(g.subscribed, m.meta.SubscribedTopicNames, -1)
		g.countRegex(m.meta.SubscribedTopicRegex, -1)
		if iid := m.meta.InstanceID; iid != "" && g.static[iid] == e.MemberID {
			delete(g.static, iid)
		}
		delete(g.members, e.MemberID)
		delete(g.target, e.MemberID)
	case ConsumerRegularExpressionResolved:
		g.applyRegexResolved(e)
	case ConsumerRegularExpressionRemoved:
		delete(g.regex.resolved, e.Regex)
	}
}

func (g *ConsumerGroup) memberForReplay(id string) *consumerMember {
	m, ok := g.members[id]
	if !ok {
		m = &consumerMember{
			meta:     ConsumerMemberUpdated{MemberID: id, RebalanceTimeoutMs: -1},
			assigned: AssignedPartitions{},
			pending:  AssignedPartitions{},
		}
		g.members[id] = m
	}
	return m
}

// applyTarget puts the targets of e's members into target and returns e's epoch (a
// consumer or a share group's new target assignment).
func applyTarget(target map[string]AssignedPartitions, e ConsumerTargetAssignmentChanged) int32 {
	for _, tm := range e.Members {
		target[tm.MemberID] = normalizeAssignment(tm.Partitions)
	}
	return e.Epoch
}

// countSubscriptions adds delta to the count of each of names.
func countSubscriptions(counts map[string]int, names []string, delta int) {
	for _, n := range names {
		if counts[n] += delta; counts[n] <= 0 {
			delete(counts, n)
		}
	}
}

// own records m as the owner of its assigned and pending partitions.
func (g *ConsumerGroup) own(m *consumerMember) {
	for _, a := range []AssignedPartitions{m.assigned, m.pending} {
		for t, ps := range a {
			for _, p := range ps {
				g.owners[consumerTP{t, p}] = m.meta.MemberID
			}
		}
	}
}

// disown forgets m's partitions (those another member already took stay with it).
func (g *ConsumerGroup) disown(m *consumerMember) {
	for _, a := range []AssignedPartitions{m.assigned, m.pending} {
		for t, ps := range a {
			for _, p := range ps {
				tp := consumerTP{t, p}
				if g.owners[tp] == m.meta.MemberID {
					delete(g.owners, tp)
				}
			}
		}
	}
}

// emitter collects the events of one call, applying each (to a consumer or a share
// group) as it is added.
type emitter[E any] struct {
	apply  func(E)
	events []E
}

func (e *emitter[E]) emit(ev E) {
	e.apply(ev)
	e.events = append(e.events, ev)
}
