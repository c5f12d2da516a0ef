package group

// A consumer group's epoch bump and target assignment: the subscription metadata
// digest whose change bumps the group epoch, the assignor the members prefer, and the
// new target assignment (Kafka's GroupMetadataManager.updateTargetAssignment with
// TargetAssignmentBuilder).

import (
	"encoding/binary"
	"hash/fnv"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// assignmentPlan is what a heartbeat will persist about the group as a whole.
type assignmentPlan struct {
	bump       bool
	groupEpoch int32
	hash       int64
	// target is the new target assignment when the group epoch passes the target's.
	target map[string]AssignedPartitions
	err    *hbError
}

// planAssignment decides the group epoch and target assignment with member meta
// updated (replacing the static member replaced, if any) and the regular expressions
// as rx leaves them, changing nothing.
func (g *ConsumerGroup) planAssignment(meta ConsumerMemberUpdated, replaced *consumerMember, subscriptionChanged bool, topics ConsumerTopics, rx *regexPlan) assignmentPlan {
	// The members' metadata as it will be: meta in place of its member's and of the
	// replaced static member's.
	skip := func(id string) bool { return id == meta.MemberID || (replaced != nil && id == replaced.meta.MemberID) }
	counts := maps.Clone(g.subscribed)
	if m, ok := g.members[meta.MemberID]; ok {
		countSubscriptions(counts, m.meta.SubscribedTopicNames, -1)
	}
	if replaced != nil && replaced.meta.MemberID != meta.MemberID {
		countSubscriptions(counts, replaced.meta.SubscribedTopicNames, -1)
	}
	countSubscriptions(counts, meta.SubscribedTopicNames, 1)
	names := rx.union(slices.Sorted(maps.Keys(counts)))

	p := assignmentPlan{groupEpoch: g.groupEpoch, hash: metadataHash(names, topics)}
	if g.groupEpoch == 0 || subscriptionChanged || p.hash != g.metadataHash {
		p.bump = true
		p.groupEpoch++
	}
	if p.groupEpoch <= g.targetEpoch {
		return p
	}

	metas := make([]ConsumerMemberUpdated, 0, len(g.members)+1)
	for _, m := range g.sortedMembers() {
		if !skip(m.meta.MemberID) {
			metas = append(metas, m.meta)
		}
	}
	metas = append(metas, meta)
	members := make([]AssignorMember, len(metas))
	for i, m := range metas {
		current := g.target[m.MemberID]
		if m.MemberID == meta.MemberID && replaced != nil {
			current = g.target[replaced.meta.MemberID]
		}
		members[i] = AssignorMember{
			MemberID:   m.MemberID,
			InstanceID: m.InstanceID,
			Rack:       m.RackID,
			TopicNames: rx.memberTopics(m),
			Current:    current,
		}
	}
	var assignTopics []AssignorTopic
	seen := make(map[[16]byte]bool)
	for _, n := range names {
		if t, ok := topics.ConsumerTopic(n); ok && !seen[t.ID] && t.Partitions >= 0 {
			seen[t.ID] = true
			assignTopics = append(assignTopics, t)
		}
	}
	assignor := g.preferredAssignor(metas)
	target, err := assignor.Assign(members, assignTopics)
	if err != nil {
		p.err = hbErrorf(kerr.UnknownServerError, "Failed to compute a new target assignment for epoch %d: %v", p.groupEpoch, err)
		return p
	}
	p.target = target
	return p
}

// targetChange is the event moving the target assignment to target at epoch: the
// members whose target changed (or who had none).
func (g *ConsumerGroup) targetChange(epoch int32, target map[string]AssignedPartitions) ConsumerTargetAssignmentChanged {
	return targetDelta(g.target, epoch, target)
}

// targetDelta is the event moving a group's target assignment from current to target
// at epoch: the members whose target changed (or who had none), in member id order.
// Consumer and share groups record it alike.
func targetDelta(current map[string]AssignedPartitions, epoch int32, target map[string]AssignedPartitions) ConsumerTargetAssignmentChanged {
	ids := make([]string, 0, len(target))
	for id := range target {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	ev := ConsumerTargetAssignmentChanged{Epoch: epoch}
	for _, id := range ids {
		next := normalizeAssignment(target[id])
		if cur, ok := current[id]; !ok || !assignmentsEqual(cur, next) {
			ev.Members = append(ev.Members, ConsumerTargetMember{MemberID: id, Partitions: next})
		}
	}
	return ev
}

// preferredAssignor is the assignor most members ask for (Kafka's
// computePreferredServerAssignor; ties go to the one configured first), else the
// default.
func (g *ConsumerGroup) preferredAssignor(metas []ConsumerMemberUpdated) Assignor {
	counts := make(map[string]int)
	for _, m := range metas {
		if m.ServerAssignor != "" {
			counts[m.ServerAssignor]++
		}
	}
	best, bestCount := g.cfg.Assignors[0], 0
	for _, a := range g.cfg.Assignors {
		if c := counts[a.Name()]; c > bestCount {
			best, bestCount = a, c
		}
	}
	return best
}

// subscriptionHash digests the metadata of the topics the members subscribe to, by
// name or by regular expression.
func (g *ConsumerGroup) subscriptionHash(topics ConsumerTopics) int64 {
	return metadataHash(g.subscribedTopicNames(), topics)
}

// metadataHash digests the id, name, partition count and partition racks of each
// existing topic among names (sorted): a topic created, deleted, recreated or grown
// changes it. Kafka 4.1+ stores such a digest (KIP-1101) with the group epoch.
func metadataHash(names []string, topics ConsumerTopics) int64 {
	h := fnv.New64a()
	var n [4]byte
	for _, name := range names {
		t, ok := topics.ConsumerTopic(name)
		if !ok {
			continue
		}
		h.Write([]byte(name))
		h.Write([]byte{0})
		h.Write(t.ID[:])
		binary.BigEndian.PutUint32(n[:], uint32(t.Partitions))
		h.Write(n[:])
		for _, racks := range t.PartitionRacks {
			binary.BigEndian.PutUint32(n[:], uint32(len(racks)))
			h.Write(n[:])
			for _, r := range racks {
				h.Write([]byte(r))
				h.Write([]byte{0})
			}
		}
	}
	return int64(h.Sum64())
}
