package group

// A member's reconciliation toward its target assignment: Kafka's
// org.apache.kafka.coordinator.group.modern.consumer.CurrentAssignmentBuilder.
//
// The rules, which keep a partition with at most one member at a time:
//   - partitions the target takes away are revoked first: the member stays at its epoch
//     in UNREVOKED_PARTITIONS until its heartbeats stop reporting them as owned;
//   - a partition another member still owns (assigned or pending revocation) is not
//     handed out: the member moves to the target epoch in UNRELEASED_PARTITIONS and
//     gets it on a later heartbeat, once the owner released it;
//   - otherwise the member moves to the target epoch, STABLE.

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// reconcile moves m toward its target assignment and persists the result when it
// changed, starting the rebalance timeout when the member has partitions to revoke
// (Kafka's GroupMetadataManager.maybeReconcile).
func (g *ConsumerGroup) reconcile(e *emitter[ConsumerEvent], m *consumerMember, owned []kmsg.ConsumerGroupHeartbeatRequestTopic, now time.Time, topics ConsumerTopics) {
	if m.reconciledTo(g.targetEpoch) {
		return
	}
	next, changed := g.nextAssignment(m, owned, topics)
	if !changed {
		return
	}
	e.emit(next)
	if m.state == MemberUnrevokedPartitions {
		m.revocationDeadline = now.Add(time.Duration(m.meta.RebalanceTimeoutMs) * time.Millisecond)
		m.revocationEpoch = m.epoch
	} else {
		m.revocationDeadline = time.Time{}
	}
}

// nextAssignment is CurrentAssignmentBuilder.build: m's next current assignment given
// the partitions it reports owning (nil: not reported, so it may own anything).
func (g *ConsumerGroup) nextAssignment(m *consumerMember, owned []kmsg.ConsumerGroupHeartbeatRequestTopic, topics ConsumerTopics) (ConsumerMemberAssignmentChanged, bool) {
	switch m.state {
	case MemberStable:
		if m.epoch == g.targetEpoch {
			return ConsumerMemberAssignmentChanged{}, false
		}
	case MemberUnrevokedPartitions:
		if ownsAny(owned, m.pending) {
			return ConsumerMemberAssignmentChanged{}, false
		}
	}
	next := g.computeNextAssignment(m, owned, topics)
	same := next.MemberEpoch == m.epoch && next.PreviousMemberEpoch == m.previousEpoch && next.State == m.state &&
		assignmentsEqual(next.Assigned, m.assigned) && assignmentsEqual(next.PendingRevocation, m.pending)
	return next, !same
}

// computeNextAssignment is CurrentAssignmentBuilder.computeNextAssignment.
func (g *ConsumerGroup) computeNextAssignment(m *consumerMember, owned []kmsg.ConsumerGroupHeartbeatRequestTopic, topics ConsumerTopics) ConsumerMemberAssignmentChanged {
	subscribed := make(map[[16]byte]bool)
	for _, n := range g.memberTopicNames(m.meta) {
		if t, ok := topics.ConsumerTopic(n); ok {
			subscribed[t.ID] = true
		}
	}
	target := g.target[m.meta.MemberID]
	keep, revoke, add := AssignedPartitions{}, AssignedPartitions{}, AssignedPartitions{}
	unreleased := false
	visit := func(t [16]byte) {
		var want []int32
		if subscribed[t] {
			want = target[t]
		}
		for _, p := range m.assigned[t] {
			if _, found := slices.BinarySearch(want, p); found {
				assignmentAdd(keep, t, p)
			} else {
				assignmentAdd(revoke, t, p)
			}
		}
		for _, p := range want {
			if assignmentContains(m.assigned, t, p) {
				continue
			}
			if owner, ok := g.owners[consumerTP{t, p}]; ok && owner != m.meta.MemberID {
				unreleased = true
				continue
			}
			assignmentAdd(add, t, p)
		}
	}
	for t := range target {
		visit(t)
	}
	for t := range m.assigned {
		if _, done := target[t]; !done {
			visit(t)
		}
	}

	next := ConsumerMemberAssignmentChanged{
		MemberID:            m.meta.MemberID,
		MemberEpoch:         g.targetEpoch,
		PreviousMemberEpoch: m.epoch,
		State:               MemberStable,
		Assigned:            keep,
		PendingRevocation:   AssignedPartitions{},
	}
	switch {
	case len(revoke) > 0 && ownsAny(owned, revoke):
		// Revoke first; the member keeps its epoch until it has.
		next.MemberEpoch = m.epoch
		next.State = MemberUnrevokedPartitions
		next.PendingRevocation = revoke
	default:
		for t, ps := range add {
			for _, p := range ps {
				assignmentAdd(next.Assigned, t, p)
			}
		}
		if unreleased {
			next.State = MemberUnreleasedPartitions
		}
	}
	return next
}

// ownsAny reports whether the member still reports owning a partition of a; a member
// that did not report its partitions may own any.
func ownsAny(owned []kmsg.ConsumerGroupHeartbeatRequestTopic, a AssignedPartitions) bool {
	return owned == nil || anyOwned(owned, func(t [16]byte, p int32) bool { return assignmentContains(a, t, p) })
}
