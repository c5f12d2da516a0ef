package group

// KIP-848 server-side assignors: the contract shared by `uniform` and `range`, the
// registry behind group.consumer.assignors, and the normalisation of an assignor's input
// into a sorted, de-duplicated form both assignors work from. Mirrors Kafka's
// org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor with
// GroupSpec and SubscribedTopicDescriber folded into two plain slices.

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Names of the built-in assignors, as ConsumerGroupHeartbeat's ServerAssignor and
// group.consumer.assignors spell them.
const (
	UniformAssignorName = "uniform"
	RangeAssignorName   = "range"
)

// DefaultConsumerAssignors is Kafka's default of group.consumer.assignors: the first is
// the group's default assignor.
var DefaultConsumerAssignors = []string{UniformAssignorName, RangeAssignorName}

// ErrUnknownAssignor is a name in group.consumer.assignors (or a member's
// ServerAssignor) that is not a built-in assignor.
var ErrUnknownAssignor = errors.New("group: unknown assignor")

// ErrInvalidAssignorInput is assignor input that cannot describe a group: a member id
// given twice, a topic id given twice, a negative partition count, or partition racks
// that do not match the partition count.
var ErrInvalidAssignorInput = errors.New("group: invalid assignor input")

// Assignor computes a consumer group's target assignment (KIP-848): Kafka's
// ConsumerGroupPartitionAssignor.
//
// Assign is a pure function of its arguments: the same members and topics, in any
// order and whatever the iteration order of their maps, give the same result. Every
// partition of a topic that at least one member subscribes to is assigned to exactly
// one member subscribed to it; the result has an entry (possibly empty) for every
// member. Subscriptions to topics missing from topics are ignored (the group resolves
// names and regular expressions against the metadata image before it asks).
// Implementations keep no state and are safe for concurrent use.
type Assignor interface {
	// Name is the assignor's name: "uniform" or "range".
	Name() string
	// Assign returns the new target assignment, keyed by member id.
	Assign(members []AssignorMember, topics []AssignorTopic) (map[string]AssignedPartitions, error)
}

// AssignorMember is one member of the group as an assignor sees it (Kafka's
// MemberSubscriptionSpec plus the member's current target assignment).
type AssignorMember struct {
	// MemberID is the member's id; unique in the group.
	MemberID string
	// InstanceID is the static member's group.instance.id, "" for a dynamic member.
	// The built-in assignors do not read it: when a static member rejoins under a new
	// member id, the group hands it the old id's Current before it asks.
	InstanceID string
	// Rack is the client's client.rack, "" when unset.
	Rack string
	// TopicIDs and TopicNames are the topics the member subscribes to; a topic named by
	// either (or both) is subscribed.
	TopicIDs   [][16]byte
	TopicNames []string
	// Current is the member's current target assignment; the assignors keep as much of
	// it as balance allows (stickiness). Partitions of topics the member no longer
	// subscribes to, partitions past a topic's count and partitions another member
	// (earlier by member id) also claims are dropped.
	Current AssignedPartitions
}

// AssignorTopic is the metadata of one topic (Kafka's SubscribedTopicDescriber).
type AssignorTopic struct {
	// ID is the topic id; Name its name.
	ID   [16]byte
	Name string
	// Partitions is the partition count.
	Partitions int32
	// PartitionRacks, when set, holds for each partition (len == Partitions) the racks
	// of its replicas; nil disables rack awareness for the topic.
	PartitionRacks [][]string
}

// AssignedPartitions is a member's assignment: topic id to partition ids, ascending.
// Topics with no partition are absent.
type AssignedPartitions map[[16]byte][]int32

// Assignors resolves group.consumer.assignors: each name is a built-in assignor's short
// name or Kafka's class name for it (org.apache.kafka.coordinator.group.assignor.
// UniformAssignor, ...RangeAssignor). The first is the group's default. An empty list,
// an unknown name or a name given twice is an error.
func Assignors(names []string) ([]Assignor, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: group.consumer.assignors must name at least one assignor", ErrUnknownAssignor)
	}
	out := make([]Assignor, 0, len(names))
	for _, n := range names {
		a, ok := builtinAssignor(strings.TrimSpace(n))
		if !ok {
			return nil, fmt.Errorf("%w %q in group.consumer.assignors", ErrUnknownAssignor, n)
		}
		if _, dup := FindAssignor(out, a.Name()); dup {
			return nil, fmt.Errorf("%w: %q listed twice in group.consumer.assignors", ErrUnknownAssignor, a.Name())
		}
		out = append(out, a)
	}
	return out, nil
}

// FindAssignor picks the assignor a member's ServerAssignor names among the configured
// ones; "" picks the default (the first). ok false is Kafka's UNSUPPORTED_ASSIGNOR.
func FindAssignor(assignors []Assignor, name string) (Assignor, bool) {
	if name == "" {
		if len(assignors) == 0 {
			return nil, false
		}
		return assignors[0], true
	}
	for _, a := range assignors {
		if a.Name() == name {
			return a, true
		}
	}
	return nil, false
}

func builtinAssignor(name string) (Assignor, bool) {
	const classPrefix = "org.apache.kafka.coordinator.group.assignor."
	switch name {
	case UniformAssignorName, classPrefix + "UniformAssignor":
		return UniformAssignor{}, true
	case RangeAssignorName, classPrefix + "RangeAssignor":
		return RangeAssignor{}, true
	}
	return nil, false
}

// assignedTP is a partition inside the assignors: t indexes assignInput.topics.
type assignedTP struct {
	t int32
	p int32
}

// assignInput is an assignor's input sorted and cleaned: members by id, topics by
// name then id, subscriptions as topic indexes, current assignments de-duplicated.
type assignInput struct {
	members []assignMember
	topics  []AssignorTopic
}

type assignMember struct {
	id   string
	rack string
	// subs are the subscribed topics' indexes, ascending.
	subs []int32
	// owned is the cleaned current assignment, by topic index then partition.
	owned []assignedTP
}

// prepareAssign validates and normalises an assignor's input so the result cannot
// depend on the order of slices or maps.
func prepareAssign(members []AssignorMember, topics []AssignorTopic) (*assignInput, error) {
	in := &assignInput{topics: slices.Clone(topics)}
	slices.SortFunc(in.topics, func(a, b AssignorTopic) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), bytes.Compare(a.ID[:], b.ID[:]))
	})
	byID := make(map[[16]byte]int32, len(topics))
	byName := make(map[string]int32, len(topics))
	for i, t := range in.topics {
		if _, dup := byID[t.ID]; dup {
			return nil, fmt.Errorf("%w: topic id %x given twice", ErrInvalidAssignorInput, t.ID)
		}
		if t.Partitions < 0 {
			return nil, fmt.Errorf("%w: topic %q has %d partitions", ErrInvalidAssignorInput, t.Name, t.Partitions)
		}
		if t.PartitionRacks != nil && len(t.PartitionRacks) != int(t.Partitions) {
			return nil, fmt.Errorf("%w: topic %q has %d partitions but racks for %d", ErrInvalidAssignorInput, t.Name, t.Partitions, len(t.PartitionRacks))
		}
		byID[t.ID] = int32(i)
		if t.Name != "" {
			byName[t.Name] = int32(i)
		}
	}

	order := make([]int, len(members))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(members[a].MemberID, members[b].MemberID) })
	for i := 1; i < len(order); i++ {
		if members[order[i]].MemberID == members[order[i-1]].MemberID {
			return nil, fmt.Errorf("%w: member %q given twice", ErrInvalidAssignorInput, members[order[i]].MemberID)
		}
	}

	// claimed[t][p] marks partitions already owned by an earlier member.
	claimed := make([][]bool, len(in.topics))
	in.members = make([]assignMember, len(members))
	subscribed := make([]bool, len(in.topics))
	for mi, oi := range order {
		src := &members[oi]
		m := &in.members[mi]
		m.id, m.rack = src.MemberID, src.Rack
		for _, id := range src.TopicIDs {
			if t, ok := byID[id]; ok && !subscribed[t] {
				subscribed[t] = true
				m.subs = append(m.subs, t)
			}
		}
		for _, name := range src.TopicNames {
			if t, ok := byName[name]; ok && !subscribed[t] {
				subscribed[t] = true
				m.subs = append(m.subs, t)
			}
		}
		slices.Sort(m.subs)
		for id, parts := range src.Current {
			t, ok := byID[id]
			if !ok || !subscribed[t] {
				continue
			}
			if claimed[t] == nil {
				claimed[t] = make([]bool, in.topics[t].Partitions)
			}
			for _, p := range parts {
				if p >= 0 && p < in.topics[t].Partitions && !claimed[t][p] {
					claimed[t][p] = true
					m.owned = append(m.owned, assignedTP{t, p})
				}
			}
		}
		slices.SortFunc(m.owned, compareTP)
		for _, t := range m.subs {
			subscribed[t] = false
		}
	}
	return in, nil
}

func compareTP(a, b assignedTP) int {
	return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.p, b.p))
}

// homogeneous reports whether every member subscribes to the same topics (Kafka's
// SubscriptionType.HOMOGENEOUS).
func (in *assignInput) homogeneous() bool {
	for i := 1; i < len(in.members); i++ {
		if !slices.Equal(in.members[i].subs, in.members[0].subs) {
			return false
		}
	}
	return true
}

// rackMatch reports whether partition tp has a replica in rack (false when either
// side has no rack information).
func (in *assignInput) rackMatch(rack string, tp assignedTP) bool {
	racks := in.topics[tp.t].PartitionRacks
	return rack != "" && racks != nil && slices.Contains(racks[tp.p], rack)
}

// result turns each member's list of partitions into the public form.
func (in *assignInput) result(assigned [][]assignedTP) map[string]AssignedPartitions {
	out := make(map[string]AssignedPartitions, len(in.members))
	for i, m := range in.members {
		list := assigned[i]
		slices.SortFunc(list, compareTP)
		ap := make(AssignedPartitions)
		for j := 0; j < len(list); {
			k := j
			for k < len(list) && list[k].t == list[j].t {
				k++
			}
			parts := make([]int32, k-j)
			for x := j; x < k; x++ {
				parts[x-j] = list[x].p
			}
			ap[in.topics[list[j].t].ID] = parts
			j = k
		}
		out[m.id] = ap
	}
	return out
}
