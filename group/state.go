package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupState is a classic group's state, as Kafka's ClassicGroupState.
type groupState int8

const (
	stateEmpty groupState = iota
	statePreparingRebalance
	stateCompletingRebalance
	stateStable
	stateDead
)

// String is the state's name as Kafka prints it (DescribeGroups, ListGroups).
func (st groupState) String() string {
	switch st {
	case stateEmpty:
		return "Empty"
	case statePreparingRebalance:
		return "PreparingRebalance"
	case stateCompletingRebalance:
		return "CompletingRebalance"
	case stateStable:
		return "Stable"
	default:
		return "Dead"
	}
}

// consumerProtocolType is the protocol type of Kafka's consumer (ConsumerProtocol).
const consumerProtocolType = "consumer"

// member is one member of a classic group (Kafka's ClassicGroupMember).
type member struct {
	id         string
	instanceID *string // group.instance.id of a static member (KIP-345), nil for dynamic ones
	clientID   string
	clientHost string
	// rebalanceTimeoutMs and sessionTimeoutMs are the member's JoinGroup timeouts (v0:
	// the session timeout is also the rebalance timeout).
	rebalanceTimeoutMs, sessionTimeoutMs int32
	protocolType                         string
	// protocols are the member's supported protocols in its order of preference.
	protocols []kmsg.JoinGroupRequestProtocol
	// assignment is what the leader assigned to the member in the current generation.
	assignment []byte

	// joinSend is the parked JoinGroup response's sender (nil: not awaiting join);
	// joinVersion is that request's version.
	joinSend    func(kmsg.Response)
	joinVersion int16
	// syncSend is the parked SyncGroup response's sender (nil: not awaiting sync).
	syncSend    func(kmsg.Response)
	syncVersion int16

	// isNew is true from a member's first JoinGroup until the join phase completes: its
	// session timer is the new-member join timeout, and it expires even while parked.
	isNew bool
}

func (m *member) awaitingJoin() bool { return m.joinSend != nil }
func (m *member) awaitingSync() bool { return m.syncSend != nil }

// metadata is the member's metadata for protocol, nil when it does not support it.
func (m *member) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// matches reports whether protocols are the member's, in the same order with the same
// metadata (Kafka's ClassicGroupMember.matches).
func (m *member) matches(protocols []kmsg.JoinGroupRequestProtocol) bool {
	if len(protocols) != len(m.protocols) {
		return false
	}
	for i, p := range protocols {
		if p.Name != m.protocols[i].Name || string(p.Metadata) != string(m.protocols[i].Metadata) {
			return false
		}
	}
	return true
}

// vote is the member's preferred protocol among candidates.
func (m *member) vote(candidates map[string]bool) string {
	for _, p := range m.protocols {
		if candidates[p.Name] {
			return p.Name
		}
	}
	return ""
}

// offsetValue is one committed offset (Kafka's OffsetAndMetadata).
type offsetValue struct {
	offset            int64
	leaderEpoch       int32 // -1 when unknown
	metadata          string
	commitTimestampMs int64
	expireTimestampMs int64 // -1 when none (only OffsetCommit v2-v4 with a retention time)
	// recordOffset is where its record is in the log (the offset when replayed, the
	// shard's position for a live write): a transactional offset materialises only
	// over an earlier record's offset. Not part of the record.
	recordOffset int64
}

// topicPartition names one partition of a topic.
type topicPartition struct {
	topic     string
	partition int32
}

// group is one classic group (Kafka's ClassicGroup) with its committed offsets.
type group struct {
	id                   string
	state, previousState groupState
	// stateTimestampMs is when the group entered its state (-1 unknown: replayed from a
	// v0/v1 record); offsets of an Empty group expire counted from it.
	stateTimestampMs int64
	generation       int32
	protocolType     string // "" for a simple (standalone) consumer's group
	protocol         string // the selected protocol of the generation, "" none
	leader           string // "" none

	members     map[string]*member
	memberOrder []string          // member ids in join order (the iteration order)
	static      map[string]string // group.instance.id -> member id
	pending     map[string]bool   // KIP-394 member ids given out, not yet joined
	pendingSync map[string]bool   // members of the generation that have not synced
	// supportedProtocols counts the members supporting each protocol name.
	supportedProtocols map[string]int

	// newMemberAdded, initialDelayMs and initialRemainingMs drive the initial rebalance
	// delay from Empty (group.initial.rebalance.delay.ms).
	newMemberAdded                   bool
	initialDelayMs, initialRemaining int32
	joinTimerInitial                 bool  // the join timer is the initial-delay one
	syncTimerGeneration              int32 // the generation the sync timer was set for

	// subscribedTopics are the topics the members of the generation subscribe to (consumer
	// protocol only); subscribedKnown is false when they are not known.
	subscribedTopics map[string]bool
	subscribedKnown  bool

	offsets map[topicPartition]offsetValue
	// pendingOffsets counts commits being written per partition (UNSTABLE_OFFSET_COMMIT).
	pendingOffsets map[topicPartition]int
}

func newGroup(id string, now time.Time) *group {
	return &group{
		id:                 id,
		state:              stateEmpty,
		previousState:      stateEmpty,
		stateTimestampMs:   now.UnixMilli(),
		members:            map[string]*member{},
		static:             map[string]string{},
		pending:            map[string]bool{},
		pendingSync:        map[string]bool{},
		supportedProtocols: map[string]int{},
		offsets:            map[topicPartition]offsetValue{},
		pendingOffsets:     map[topicPartition]int{},
		subscribedTopics:   map[string]bool{},
	}
}

func (g *group) is(st groupState) bool { return g.state == st }

func (g *group) transitionTo(st groupState, now time.Time) {
	g.previousState = g.state
	g.state = st
	g.stateTimestampMs = now.UnixMilli()
}

// all returns the members in join order.
func (g *group) all() []*member {
	out := make([]*member, 0, len(g.memberOrder))
	for _, id := range g.memberOrder {
		out = append(out, g.members[id])
	}
	return out
}

func (g *group) add(m *member) {
	if len(g.members) == 0 {
		g.protocolType = m.protocolType
	}
	if old, ok := g.members[m.id]; ok {
		// Added again (a member replaced under its id): its place in the join order
		// stays, its old protocols are no longer counted.
		g.countProtocols(old.protocols, -1)
	} else {
		g.memberOrder = append(g.memberOrder, m.id)
	}
	g.members[m.id] = m
	g.countProtocols(m.protocols, 1)
	delete(g.pending, m.id)
	if g.leader == "" {
		g.leader = m.id
	}
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
}

// remove forgets a member or a pending member id; a new leader is the first member left.
func (g *group) remove(memberID string) {
	if m, ok := g.members[memberID]; ok {
		delete(g.members, memberID)
		for i, id := range g.memberOrder {
			if id == memberID {
				g.memberOrder = append(g.memberOrder[:i:i], g.memberOrder[i+1:]...)
				break
			}
		}
		g.countProtocols(m.protocols, -1)
		if m.instanceID != nil && g.static[*m.instanceID] == memberID {
			delete(g.static, *m.instanceID)
		}
	}
	if g.leader == memberID {
		g.leader = ""
		if len(g.memberOrder) > 0 {
			g.leader = g.memberOrder[0]
		}
	}
	delete(g.pending, memberID)
	delete(g.pendingSync, memberID)
}

// setProtocols replaces a member's protocols, keeping supportedProtocols counted.
func (g *group) setProtocols(m *member, protocols []kmsg.JoinGroupRequestProtocol) {
	g.countProtocols(m.protocols, -1)
	m.protocols = protocols
	g.countProtocols(m.protocols, 1)
}

// countProtocols adds delta to the count of each distinct protocol name (a name listed
// twice by one member counts once).
func (g *group) countProtocols(protocols []kmsg.JoinGroupRequestProtocol, delta int) {
	seen := make(map[string]bool, len(protocols))
	for _, p := range protocols {
		if seen[p.Name] {
			continue
		}
		seen[p.Name] = true
		if g.supportedProtocols[p.Name] += delta; g.supportedProtocols[p.Name] <= 0 {
			delete(g.supportedProtocols, p.Name)
		}
	}
}

// supportsProtocols is Kafka's ClassicGroup.supportsProtocols: an Empty group takes any
// non-empty protocol type and list; otherwise the type must match and one protocol be
// supported by every member.
func (g *group) supportsProtocols(protocolType string, protocols []kmsg.JoinGroupRequestProtocol) bool {
	if g.is(stateEmpty) {
		return protocolType != "" && len(protocols) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range protocols {
		if g.supportedProtocols[p.Name] == len(g.members) {
			return true
		}
	}
	return false
}

// selectProtocol picks the protocol every member supports with the most votes; ties go
// to the one the earliest member prefers.
func (g *group) selectProtocol() string {
	candidates := map[string]bool{}
	for name, n := range g.supportedProtocols {
		if n == len(g.members) {
			candidates[name] = true
		}
	}
	votes := map[string]int{}
	var order []string
	for _, m := range g.all() {
		v := m.vote(candidates)
		if votes[v] == 0 {
			order = append(order, v)
		}
		votes[v]++
	}
	best := ""
	for _, name := range order {
		if best == "" || votes[name] > votes[best] {
			best = name
		}
	}
	return best
}

// rebalanceTimeoutMs is the largest rebalance timeout of the members.
func (g *group) rebalanceTimeoutMs() int32 {
	var max int32
	for _, m := range g.members {
		if m.rebalanceTimeoutMs > max {
			max = m.rebalanceTimeoutMs
		}
	}
	return max
}

func (g *group) numAwaitingJoin() int {
	n := 0
	for _, m := range g.members {
		if m.awaitingJoin() {
			n++
		}
	}
	return n
}

func (g *group) hasAllMembersJoined() bool {
	return len(g.members) == g.numAwaitingJoin() && len(g.pending) == 0
}

// validateMember is Kafka's ClassicGroup.validateMember: UNKNOWN_MEMBER_ID or
// FENCED_INSTANCE_ID, 0 when the member is known.
func (g *group) validateMember(memberID string, instanceID *string) int16 {
	if instanceID != nil {
		existing, ok := g.static[*instanceID]
		if !ok {
			return errUnknownMemberID
		}
		if existing != memberID {
			return errFencedInstanceID
		}
		return 0
	}
	if _, ok := g.members[memberID]; !ok {
		return errUnknownMemberID
	}
	return 0
}

// initNextGeneration bumps the generation and selects its protocol.
func (g *group) initNextGeneration(now time.Time) {
	g.generation++
	if len(g.members) > 0 {
		g.protocol = g.selectProtocol()
		g.computeSubscribedTopics()
		g.transitionTo(stateCompletingRebalance, now)
	} else {
		g.protocol = ""
		g.computeSubscribedTopics()
		g.transitionTo(stateEmpty, now)
	}
	g.pendingSync = map[string]bool{}
}

// computeSubscribedTopics collects the topics the members subscribe to, as Kafka: known
// only for the consumer protocol type once a protocol is selected (an empty group
// subscribes to nothing). Each member's metadata is read as the consumer protocol's v0
// prefix (int16 version, then the topic array), which every later version extends.
func (g *group) computeSubscribedTopics() {
	g.subscribedTopics = map[string]bool{}
	g.subscribedKnown = false
	if g.protocolType != consumerProtocolType {
		return
	}
	if len(g.members) == 0 {
		g.subscribedKnown = true
		return
	}
	if g.protocol == "" {
		return
	}
	topics := map[string]bool{}
	for _, m := range g.members {
		r := reader{b: m.metadata(g.protocol)}
		r.int16()
		n := r.arrayLength()
		for i := 0; i < n && r.err == nil; i++ {
			topics[r.string()] = true
		}
		if r.err != nil {
			return
		}
	}
	g.subscribedTopics, g.subscribedKnown = topics, true
}

// isSubscribedToTopic reports whether the generation's members subscribe to topic; when
// that is not known, a consumer-protocol group counts as subscribed, as Kafka.
func (g *group) isSubscribedToTopic(topic string) bool {
	if !g.subscribedKnown {
		return g.protocolType == consumerProtocolType
	}
	return g.subscribedTopics[topic]
}

// currentMembers is the member list the leader gets in its JoinGroup response.
func (g *group) currentMembers() []kmsg.JoinGroupResponseMember {
	out := make([]kmsg.JoinGroupResponseMember, 0, len(g.members))
	for _, m := range g.all() {
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID = m.id
		jm.InstanceID = m.instanceID
		jm.ProtocolMetadata = m.metadata(g.protocol)
		out = append(out, jm)
	}
	return out
}

// protocolPtr is the selected protocol as the responses carry it (nil when none).
func (g *group) protocolPtr() *string {
	if g.protocol == "" {
		return nil
	}
	p := g.protocol
	return &p
}

func (g *group) protocolTypePtr() *string {
	if g.protocolType == "" {
		return nil
	}
	p := g.protocolType
	return &p
}
