package group

// The KIP-848 consumer group of one group id: its epochs, members, target assignment
// and partition ownership. Mirrors Kafka's
// org.apache.kafka.coordinator.group.modern.consumer.ConsumerGroup (and
// ConsumerGroupMember); the heartbeat that drives it is consumer_heartbeat.go.
//
// Every persistent change goes through apply (consumer_events.go), the same path
// Replay takes, so a group rebuilt from its records is the group that wrote them.

import (
	"bytes"
	"slices"
	"strings"
	"time"
)

// ConsumerConfig is a consumer group's settings; DefaultConsumerConfig gives Kafka's
// defaults.
type ConsumerConfig struct {
	// SessionTimeout is consumer.session.timeout.ms (group.consumer.session.timeout.ms,
	// 45000): a member that does not heartbeat within it is removed.
	SessionTimeout time.Duration
	// HeartbeatInterval is consumer.heartbeat.interval.ms
	// (group.consumer.heartbeat.interval.ms, 5000), returned in every response.
	HeartbeatInterval time.Duration
	// MaxSize is group.consumer.max.size; 0 means unlimited (Kafka's default is
	// Int.MaxValue). A new member past it gets GROUP_MAX_SIZE_REACHED.
	MaxSize int
	// Assignors are group.consumer.assignors resolved (Assignors); the first is the
	// default. Empty means DefaultConsumerAssignors.
	Assignors []Assignor
	// NewMemberID generates a member id for a ConsumerGroupHeartbeat v0 join without
	// one (v1+ clients generate their own, KIP-1082). Kafka uses a random UUID; the
	// package draws no randomness, so the caller supplies it.
	NewMemberID func() string
	// RegexRefreshInterval is group.consumer.regex.refresh.interval.ms (600000): the
	// longest a group's regular expression resolutions stand while members heartbeat
	// (consumer_regex.go). 0 means the default.
	RegexRefreshInterval time.Duration
}

// DefaultConsumerConfig returns Kafka's defaults; NewMemberID is left for the caller.
func DefaultConsumerConfig() ConsumerConfig {
	return ConsumerConfig{
		SessionTimeout:    45 * time.Second,
		HeartbeatInterval: 5 * time.Second,
	}
}

// ConsumerGroupState is a consumer group's state, as Kafka's
// ConsumerGroup.ConsumerGroupState.
type ConsumerGroupState int8

// The consumer group states.
const (
	ConsumerGroupEmpty ConsumerGroupState = iota
	ConsumerGroupAssigning
	ConsumerGroupReconciling
	ConsumerGroupStable
	ConsumerGroupDead
)

// String is the state's name as Kafka prints it (ConsumerGroupDescribe, ListGroups).
func (s ConsumerGroupState) String() string {
	switch s {
	case ConsumerGroupEmpty:
		return "Empty"
	case ConsumerGroupAssigning:
		return "Assigning"
	case ConsumerGroupReconciling:
		return "Reconciling"
	case ConsumerGroupStable:
		return "Stable"
	default:
		return "Dead"
	}
}

// ConsumerMemberState is a member's reconciliation state, as Kafka's
// org.apache.kafka.coordinator.group.modern.MemberState; the values are the ones
// ConsumerGroupCurrentMemberAssignmentValue.State stores.
type ConsumerMemberState int8

// The member states.
const (
	// MemberStable: the member has its target assignment, or is moving to it without
	// anything to wait for.
	MemberStable ConsumerMemberState = 0
	// MemberUnrevokedPartitions: the member must revoke partitions (it still reports
	// owning some of its PendingRevocation) before it moves to the target epoch.
	MemberUnrevokedPartitions ConsumerMemberState = 1
	// MemberUnreleasedPartitions: the member is at the target epoch but some of its
	// target partitions are still owned by other members.
	MemberUnreleasedPartitions ConsumerMemberState = 2
	// MemberUnknown is a state this build does not know (a newer coordinator's).
	MemberUnknown ConsumerMemberState = 127
)

// String is the state's name as Kafka prints it.
func (s ConsumerMemberState) String() string {
	switch s {
	case MemberStable:
		return "stable"
	case MemberUnrevokedPartitions:
		return "unrevoked_partitions"
	case MemberUnreleasedPartitions:
		return "unreleased_partitions"
	default:
		return "unknown"
	}
}

// Member epochs with a meaning in ConsumerGroupHeartbeat.
const (
	// JoinMemberEpoch joins (or rejoins) the group.
	JoinMemberEpoch int32 = 0
	// LeaveMemberEpoch leaves the group.
	LeaveMemberEpoch int32 = -1
	// LeaveStaticMemberEpoch is a static member leaving temporarily: it keeps its
	// assignment until it rejoins or its session times out.
	LeaveStaticMemberEpoch int32 = -2
)

// consumerMember is one member (Kafka's ConsumerGroupMember).
type consumerMember struct {
	// Metadata (ConsumerGroupMemberMetadataValue).
	meta ConsumerMemberUpdated
	// Current assignment (ConsumerGroupCurrentMemberAssignmentValue).
	epoch, previousEpoch int32
	state                ConsumerMemberState
	assigned, pending    AssignedPartitions

	// Timers, not persisted: StartTimers sets them after a replay.
	sessionDeadline time.Time
	// revocationDeadline, when set, is the end of the rebalance timeout of a member in
	// UNREVOKED_PARTITIONS at revocationEpoch.
	revocationDeadline time.Time
	revocationEpoch    int32
	// classicDeadline, when set, is when a classic member told to rejoin must have
	// sent JoinGroup, or one that joined must have sent SyncGroup (its rebalance
	// timeout; consumer_classic.go).
	classicDeadline time.Time
}

func (m *consumerMember) reconciledTo(targetEpoch int32) bool {
	return m.state == MemberStable && m.epoch == targetEpoch
}

// consumerTP names one partition by topic id.
type consumerTP struct {
	topic     [16]byte
	partition int32
}

// ConsumerGroup is the state of one KIP-848 consumer group (Kafka's ConsumerGroup):
// members, group epoch, target assignment and who owns which partition.
//
// It is a pure state machine: time comes in as arguments, changes come out as
// ConsumerEvents for the caller to persist. Not safe for concurrent use.
type ConsumerGroup struct {
	id  string
	cfg ConsumerConfig

	groupEpoch   int32
	metadataHash int64
	targetEpoch  int32
	target       map[string]AssignedPartitions
	members      map[string]*consumerMember
	// static maps a group.instance.id to its member id.
	static map[string]string
	// subscribed counts the members subscribing to each topic name (Kafka's
	// subscribedTopicNames), so a heartbeat digests the subscribed metadata without
	// walking every member.
	subscribed map[string]int
	// owners maps every partition assigned to or pending revocation from a member to
	// that member (Kafka's partition epochs, keyed by owner instead of epoch).
	owners map[consumerTP]string
	// regex holds the resolutions of the members' regular expressions
	// (consumer_regex.go).
	regex consumerRegexes
}

// NewConsumerGroup returns an empty consumer group.
func NewConsumerGroup(id string, cfg ConsumerConfig) *ConsumerGroup {
	if len(cfg.Assignors) == 0 {
		cfg.Assignors, _ = Assignors(DefaultConsumerAssignors)
	}
	return &ConsumerGroup{
		id:         id,
		cfg:        cfg,
		target:     make(map[string]AssignedPartitions),
		members:    make(map[string]*consumerMember),
		static:     make(map[string]string),
		subscribed: make(map[string]int),
		owners:     make(map[consumerTP]string),
	}
}

// ID is the group id.
func (g *ConsumerGroup) ID() string { return g.id }

// GroupEpoch is the group epoch: bumped by every change of membership, subscriptions
// or subscribed topics' metadata.
func (g *ConsumerGroup) GroupEpoch() int32 { return g.groupEpoch }

// TargetAssignmentEpoch is the group epoch the target assignment was computed at.
func (g *ConsumerGroup) TargetAssignmentEpoch() int32 { return g.targetEpoch }

// NumMembers is the number of members, static members that left temporarily included.
func (g *ConsumerGroup) NumMembers() int { return len(g.members) }

// State is the group's state, as Kafka's ConsumerGroup.maybeUpdateGroupState derives
// it: Empty without members, Assigning while the target assignment lags the group
// epoch, Reconciling while a member has not reached it, Stable otherwise.
func (g *ConsumerGroup) State() ConsumerGroupState {
	switch {
	case len(g.members) == 0:
		return ConsumerGroupEmpty
	case g.groupEpoch > g.targetEpoch:
		return ConsumerGroupAssigning
	}
	for _, m := range g.members {
		if !m.reconciledTo(g.targetEpoch) {
			return ConsumerGroupReconciling
		}
	}
	return ConsumerGroupStable
}

// ConsumerMemberView is a read-only copy of one member, for describing the group and
// for tests.
type ConsumerMemberView struct {
	ConsumerMemberUpdated
	MemberEpoch, PreviousMemberEpoch int32
	State                            ConsumerMemberState
	Assigned, PendingRevocation      AssignedPartitions
	// Target is the member's target assignment.
	Target AssignedPartitions
}

// Member returns a copy of the member, ok false when it is not in the group.
func (g *ConsumerGroup) Member(memberID string) (ConsumerMemberView, bool) {
	m, ok := g.members[memberID]
	if !ok {
		return ConsumerMemberView{}, false
	}
	v := ConsumerMemberView{
		ConsumerMemberUpdated: m.meta,
		MemberEpoch:           m.epoch,
		PreviousMemberEpoch:   m.previousEpoch,
		State:                 m.state,
		Assigned:              cloneAssignment(m.assigned),
		PendingRevocation:     cloneAssignment(m.pending),
		Target:                cloneAssignment(g.target[memberID]),
	}
	v.SubscribedTopicNames = slices.Clone(m.meta.SubscribedTopicNames)
	return v, true
}

// MemberIDs returns the members' ids, sorted.
func (g *ConsumerGroup) MemberIDs() []string {
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// StaticMemberID returns the member id holding group.instance.id instanceID.
func (g *ConsumerGroup) StaticMemberID(instanceID string) (string, bool) {
	id, ok := g.static[instanceID]
	return id, ok
}

// sortedMembers returns the members ordered by id (deterministic iteration).
func (g *ConsumerGroup) sortedMembers() []*consumerMember {
	out := make([]*consumerMember, 0, len(g.members))
	for _, m := range g.members {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b *consumerMember) int { return strings.Compare(a.meta.MemberID, b.meta.MemberID) })
	return out
}

// Assignment helpers. An AssignedPartitions keeps partitions ascending and omits empty
// topics.

func cloneAssignment(a AssignedPartitions) AssignedPartitions {
	out := make(AssignedPartitions, len(a))
	for t, ps := range a {
		out[t] = slices.Clone(ps)
	}
	return out
}

func assignmentContains(a AssignedPartitions, t [16]byte, p int32) bool {
	_, ok := slices.BinarySearch(a[t], p)
	return ok
}

func assignmentsEqual(a, b AssignedPartitions) bool {
	if len(a) != len(b) {
		return false
	}
	for t, ps := range a {
		if !slices.Equal(ps, b[t]) {
			return false
		}
	}
	return true
}

// assignmentAdd adds p to topic t of a (which it modifies).
func assignmentAdd(a AssignedPartitions, t [16]byte, p int32) {
	ps := a[t]
	if i, found := slices.BinarySearch(ps, p); !found {
		a[t] = slices.Insert(ps, i, p)
	}
}

// sortedTopics returns a's topic ids in byte order.
func sortedTopics(a AssignedPartitions) [][16]byte {
	ids := make([][16]byte, 0, len(a))
	for t := range a {
		ids = append(ids, t)
	}
	slices.SortFunc(ids, func(x, y [16]byte) int { return bytes.Compare(x[:], y[:]) })
	return ids
}

// normalizeAssignment sorts and de-duplicates partitions and drops empty topics.
func normalizeAssignment(a AssignedPartitions) AssignedPartitions {
	out := make(AssignedPartitions, len(a))
	for t, ps := range a {
		if len(ps) == 0 {
			continue
		}
		c := slices.Clone(ps)
		slices.Sort(c)
		out[t] = slices.Compact(c)
	}
	return out
}
