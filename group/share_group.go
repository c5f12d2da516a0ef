package group

// The KIP-932 share group of one group id: members, group epoch, target assignment and
// which partitions have share state (Kafka's
// org.apache.kafka.coordinator.group.modern.share.ShareGroup and ShareGroupMember).
// A share group is a KIP-848 group without revocation: the SimpleAssignor may give a
// partition to several members (the share-partition leader hands each record to one
// of them), and a member moves to its target assignment at once. The heartbeat that
// drives it is share_heartbeat.go; its records share_records.go.
//
// As ConsumerGroup, every persistent change goes through apply, the path Replay takes.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// ShareConfig is the share groups' settings (group.share.*); DefaultShareConfig gives
// Kafka 4.2's defaults.
type ShareConfig struct {
	// SessionTimeout is group.share.session.timeout.ms (45000): a member that does not
	// heartbeat within it is removed.
	SessionTimeout time.Duration
	// HeartbeatInterval is group.share.heartbeat.interval.ms (5000), returned in every
	// response.
	HeartbeatInterval time.Duration
	// MaxSize is group.share.max.size (200): a new member past it gets
	// GROUP_MAX_SIZE_REACHED.
	MaxSize int
	// InitializeRetryInterval is group.share.initialize.retry.interval.ms (30000): a
	// partition whose share state initialization has not completed for this long is
	// asked for again by the next heartbeat.
	InitializeRetryInterval time.Duration
}

// The bounds Kafka 4.2 puts on the share group settings (GroupCoordinatorConfig):
// group.share.min/max.session.timeout.ms, group.share.min/max.heartbeat.interval.ms,
// and group.share.max.size's range.
const (
	ShareMinSessionTimeout    = 45 * time.Second
	ShareMaxSessionTimeout    = 60 * time.Second
	ShareMinHeartbeatInterval = 5 * time.Second
	ShareMaxHeartbeatInterval = 15 * time.Second
	ShareMaxSizeLimit         = 1000
)

// DefaultShareConfig returns Kafka's defaults.
func DefaultShareConfig() ShareConfig {
	return ShareConfig{
		SessionTimeout:          45 * time.Second,
		HeartbeatInterval:       5 * time.Second,
		MaxSize:                 200,
		InitializeRetryInterval: 30 * time.Second,
	}
}

// ErrInvalidShareConfig is a share group setting out of Kafka's bounds.
var ErrInvalidShareConfig = errors.New("group: invalid share group config")

// Validate checks c against Kafka's bounds, with Kafka's wording.
func (c ShareConfig) Validate() error {
	within := func(name string, v, lo, hi time.Duration) error {
		if v < lo || v > hi {
			return fmt.Errorf("%w: %s must be between %d and %d", ErrInvalidShareConfig, name, lo.Milliseconds(), hi.Milliseconds())
		}
		return nil
	}
	if err := within("group.share.session.timeout.ms", c.SessionTimeout, ShareMinSessionTimeout, ShareMaxSessionTimeout); err != nil {
		return err
	}
	if err := within("group.share.heartbeat.interval.ms", c.HeartbeatInterval, ShareMinHeartbeatInterval, ShareMaxHeartbeatInterval); err != nil {
		return err
	}
	if c.HeartbeatInterval >= c.SessionTimeout {
		return fmt.Errorf("%w: group.share.heartbeat.interval.ms must be less than group.share.session.timeout.ms", ErrInvalidShareConfig)
	}
	if c.MaxSize < 1 || c.MaxSize > ShareMaxSizeLimit {
		return fmt.Errorf("%w: group.share.max.size must be between 1 and %d", ErrInvalidShareConfig, ShareMaxSizeLimit)
	}
	return nil
}

// withDefaults fills c's zero fields with Kafka's defaults.
func (c ShareConfig) withDefaults() ShareConfig {
	def := DefaultShareConfig()
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = def.SessionTimeout
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = def.HeartbeatInterval
	}
	if c.MaxSize <= 0 {
		c.MaxSize = def.MaxSize
	}
	if c.InitializeRetryInterval <= 0 {
		c.InitializeRetryInterval = def.InitializeRetryInterval
	}
	return c
}

// ShareGroupState is a share group's state, as Kafka's ShareGroup.ShareGroupState.
type ShareGroupState int8

// The share group states: Empty without members, Stable with, Dead once deleted.
const (
	ShareGroupEmpty ShareGroupState = iota
	ShareGroupStable
	ShareGroupDead
)

// String is the state's name as Kafka prints it.
func (s ShareGroupState) String() string {
	switch s {
	case ShareGroupEmpty:
		return "Empty"
	case ShareGroupStable:
		return "Stable"
	default:
		return "Dead"
	}
}

// SimpleAssignorName is the share groups' assignor, as ShareGroupDescribe names it.
const SimpleAssignorName = "simple"

// shareMember is one member (Kafka's ShareGroupMember).
type shareMember struct {
	meta                 ShareMemberUpdated
	epoch, previousEpoch int32
	assigned             AssignedPartitions
	// sessionDeadline is not persisted: StartTimers sets it after a load.
	sessionDeadline time.Time
}

// ShareTopicPartitions is partitions of one topic, by id and name: the share state a
// group has, or is to have, on the share coordinator.
type ShareTopicPartitions struct {
	TopicID    [16]byte
	TopicName  string
	Partitions []int32
}

// ShareGroup is the state of one share group. It is a pure state machine: time comes
// in as arguments, changes come out as ShareEvents for the caller to persist. Not safe
// for concurrent use.
type ShareGroup struct {
	id  string
	cfg ShareConfig

	groupEpoch   int32
	metadataHash int64
	targetEpoch  int32
	target       map[string]AssignedPartitions
	members      map[string]*shareMember
	// subscribed counts the members subscribing to each topic name.
	subscribed map[string]int
	// The share state partitions (ShareGroupStatePartitionMetadataValue), by topic id.
	initializing, initialized map[[16]byte]ShareTopicPartitions
	deleting                  map[[16]byte]string
	// initializingSince is when each initializing topic was last asked for (not
	// persisted: StartTimers sets it after a load).
	initializingSince map[[16]byte]time.Time
}

// NewShareGroup returns an empty share group.
func NewShareGroup(id string, cfg ShareConfig) *ShareGroup {
	return &ShareGroup{
		id:                id,
		cfg:               cfg.withDefaults(),
		target:            map[string]AssignedPartitions{},
		members:           map[string]*shareMember{},
		subscribed:        map[string]int{},
		initializing:      map[[16]byte]ShareTopicPartitions{},
		initialized:       map[[16]byte]ShareTopicPartitions{},
		deleting:          map[[16]byte]string{},
		initializingSince: map[[16]byte]time.Time{},
	}
}

// ID is the group id.
func (g *ShareGroup) ID() string { return g.id }

// GroupEpoch is the group epoch.
func (g *ShareGroup) GroupEpoch() int32 { return g.groupEpoch }

// TargetAssignmentEpoch is the group epoch the target assignment was computed at.
func (g *ShareGroup) TargetAssignmentEpoch() int32 { return g.targetEpoch }

// NumMembers is the number of members.
func (g *ShareGroup) NumMembers() int { return len(g.members) }

// State is Empty without members, Stable otherwise (Kafka's ShareGroup has no
// assigning or reconciling state).
func (g *ShareGroup) State() ShareGroupState {
	if len(g.members) == 0 {
		return ShareGroupEmpty
	}
	return ShareGroupStable
}

// MemberIDs returns the members' ids, sorted.
func (g *ShareGroup) MemberIDs() []string { return slices.Sorted(maps.Keys(g.members)) }

// ShareMemberView is a read-only copy of one member.
type ShareMemberView struct {
	ShareMemberUpdated
	MemberEpoch, PreviousMemberEpoch int32
	Assigned                         AssignedPartitions
	// Target is the member's target assignment.
	Target AssignedPartitions
}

// Member returns a copy of the member, ok false when it is not in the group.
func (g *ShareGroup) Member(memberID string) (ShareMemberView, bool) {
	m, ok := g.members[memberID]
	if !ok {
		return ShareMemberView{}, false
	}
	v := ShareMemberView{ShareMemberUpdated: m.meta, MemberEpoch: m.epoch, PreviousMemberEpoch: m.previousEpoch,
		Assigned: cloneAssignment(m.assigned), Target: cloneAssignment(g.target[memberID])}
	v.SubscribedTopicNames = slices.Clone(m.meta.SubscribedTopicNames)
	return v, true
}

// SharePartitions returns the topics whose share state is initialized, being
// initialized, and being deleted (by id, with their names), in topic id order.
func (g *ShareGroup) SharePartitions() (initialized, initializing []ShareTopicPartitions, deleting []ShareTopicInfo) {
	return sortedShareTopics(g.initialized), sortedShareTopics(g.initializing), g.deletingTopics()
}

func sortedShareTopics(m map[[16]byte]ShareTopicPartitions) []ShareTopicPartitions {
	out := make([]ShareTopicPartitions, 0, len(m))
	for _, id := range sortedIDs(m) {
		t := m[id]
		t.Partitions = slices.Clone(t.Partitions)
		out = append(out, t)
	}
	return out
}

func (g *ShareGroup) deletingTopics() []ShareTopicInfo {
	out := make([]ShareTopicInfo, 0, len(g.deleting))
	for _, id := range sortedIDs(g.deleting) {
		out = append(out, ShareTopicInfo{TopicID: id, TopicName: g.deleting[id]})
	}
	return out
}

// sortedIDs returns m's topic ids in byte order.
func sortedIDs[V any](m map[[16]byte]V) [][16]byte {
	a := make(AssignedPartitions, len(m))
	for id := range m {
		a[id] = nil
	}
	return sortedTopics(a)
}

// ShareEvent is a persistent change of a share group: one of ShareMemberUpdated,
// ShareGroupEpochBumped, ShareTargetAssignmentChanged, ShareMemberAssignmentChanged,
// ShareMemberRemoved, ShareStatePartitionsChanged.
type ShareEvent interface {
	// appendRecords adds the event's records (share_records.go).
	appendRecords(add shareRecordAdder)
}

// ShareMemberUpdated is a member's metadata (ShareGroupMemberMetadataValue).
type ShareMemberUpdated struct {
	MemberID   string
	RackID     string
	ClientID   string
	ClientHost string
	// SubscribedTopicNames is sorted and de-duplicated.
	SubscribedTopicNames []string
}

// ShareGroupEpochBumped is a new group epoch (ShareGroupMetadataValue).
type ShareGroupEpochBumped ConsumerGroupEpochBumped

// ShareTargetAssignmentChanged is a new target assignment at Epoch: one target member
// record per entry of Members (those whose target changed), then the target metadata.
type ShareTargetAssignmentChanged ConsumerTargetAssignmentChanged

// ShareMemberAssignmentChanged is a member's epochs and assignment
// (ShareGroupCurrentMemberAssignmentValue).
type ShareMemberAssignmentChanged struct {
	MemberID                         string
	MemberEpoch, PreviousMemberEpoch int32
	Assigned                         AssignedPartitions
}

// ShareMemberRemoved removes a member: the tombstones of its current assignment,
// target assignment and metadata records.
type ShareMemberRemoved struct{ MemberID string }

// ShareStatePartitionsChanged is the whole share state partition metadata of the
// group (ShareGroupStatePartitionMetadataValue).
type ShareStatePartitionsChanged struct {
	Initializing, Initialized []ShareTopicPartitions
	Deleting                  []ShareTopicInfo
}

// Replay applies an event read back from __consumer_offsets. As ConsumerGroup.Replay,
// it tolerates a member's assignment or target preceding its metadata.
func (g *ShareGroup) Replay(ev ShareEvent) { g.apply(ev) }

// apply changes the group by one event (nil: none).
func (g *ShareGroup) apply(ev ShareEvent) {
	switch e := ev.(type) {
	case ShareMemberUpdated:
		m := g.memberForReplay(e.MemberID)
		countSubscriptions(g.subscribed, m.meta.SubscribedTopicNames, -1)
		m.meta = e
		m.meta.SubscribedTopicNames = slices.Clone(e.SubscribedTopicNames)
		countSubscriptions(g.subscribed, m.meta.SubscribedTopicNames, 1)
	case ShareGroupEpochBumped:
		g.groupEpoch, g.metadataHash = e.Epoch, e.MetadataHash
	case ShareTargetAssignmentChanged:
		g.targetEpoch = applyTarget(g.target, ConsumerTargetAssignmentChanged(e))
	case ShareMemberAssignmentChanged:
		m := g.memberForReplay(e.MemberID)
		m.epoch, m.previousEpoch = e.MemberEpoch, e.PreviousMemberEpoch
		m.assigned = normalizeAssignment(e.Assigned)
	case ShareMemberRemoved:
		if m, ok := g.members[e.MemberID]; ok {
			countSubscriptions(g.subscribed, m.meta.SubscribedTopicNames, -1)
			delete(g.members, e.MemberID)
		}
		delete(g.target, e.MemberID)
	case ShareStatePartitionsChanged:
		g.initializing = shareTopicMap(e.Initializing)
		g.initialized = shareTopicMap(e.Initialized)
		g.deleting = map[[16]byte]string{}
		for _, t := range e.Deleting {
			g.deleting[t.TopicID] = t.TopicName
		}
		for id := range g.initializingSince {
			if _, ok := g.initializing[id]; !ok {
				delete(g.initializingSince, id)
			}
		}
	}
}

// shareTopicMap is ts by topic id, partitions sorted and de-duplicated, empty topics
// left out.
func shareTopicMap(ts []ShareTopicPartitions) map[[16]byte]ShareTopicPartitions {
	out := make(map[[16]byte]ShareTopicPartitions, len(ts))
	for _, t := range ts {
		ps := append(slices.Clone(out[t.TopicID].Partitions), t.Partitions...)
		slices.Sort(ps)
		if ps = slices.Compact(ps); len(ps) > 0 {
			out[t.TopicID] = ShareTopicPartitions{TopicID: t.TopicID, TopicName: t.TopicName, Partitions: ps}
		}
	}
	return out
}

func (g *ShareGroup) memberForReplay(id string) *shareMember {
	m, ok := g.members[id]
	if !ok {
		m = &shareMember{meta: ShareMemberUpdated{MemberID: id}, assigned: AssignedPartitions{}}
		g.members[id] = m
	}
	return m
}
