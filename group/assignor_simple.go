package group

// The share groups' assignor, after Kafka 4.2's
// org.apache.kafka.coordinator.group.assignor.SimpleAssignor (its
// SimpleHomogeneousAssignmentBuilder and SimpleHeterogeneousAssignmentBuilder): every
// assignable partition of a subscribed topic goes to at least one subscribed member,
// and when members outnumber partitions a partition goes to several.
//
// With M members and P partitions, each partition is wanted by ceil(M/P) members (its
// desired sharing), and the k-th member (in member id order) wants
// ceil(x*(k+1)) - ceil(x*k) partitions, x = sharing*P/M: the counts differ by at most
// one. Balance comes before stickiness: from the current assignment the builder
// drops partitions of topics a member no longer subscribes to, then partitions past
// a member's count, then members past a partition's sharing, and last hands the
// partitions short of their sharing to the members short of their count, in turn,
// skipping a member that already holds the partition (a slight imbalance Kafka
// tolerates too). When all members subscribe to the same topics (homogeneous) the
// counts are over all their partitions; otherwise each topic is balanced on its own
// among its subscribers.
//
// Kafka iterates hash maps where this file iterates sorted members (by id) and sorted
// partitions (topic id, partition): the rules are Kafka's, the tie-breaks are
// deterministic.

import (
	"math"
	"slices"
	"strings"
)

// shareAssignee is one member as the simple assignor sees it.
type shareAssignee struct {
	id string
	// topics are the ids of the existing topics the member subscribes to, sorted.
	topics [][16]byte
	// current is the member's current target assignment.
	current AssignedPartitions
}

// simpleAssign computes the target assignment of members over the assignable
// partitions of each topic (sorted; a topic absent has none). Every member has an
// entry in the result, possibly empty.
func simpleAssign(members []shareAssignee, assignable map[[16]byte][]int32) map[string]AssignedPartitions {
	members = slices.Clone(members)
	slices.SortFunc(members, func(a, b shareAssignee) int { return strings.Compare(a.id, b.id) })
	b := &simpleBuilder{members: members, out: make([]AssignedPartitions, len(members))}
	for i := range b.out {
		b.out[i] = AssignedPartitions{}
	}
	homogeneous := true
	for _, m := range members[min(1, len(members)):] {
		homogeneous = homogeneous && slices.Equal(m.topics, members[0].topics)
	}
	all := make([]int, len(members))
	for i := range all {
		all[i] = i
	}
	if homogeneous && len(members) > 0 {
		var parts []consumerTP
		for _, t := range members[0].topics {
			for _, p := range assignable[t] {
				parts = append(parts, consumerTP{t, p})
			}
		}
		b.balance(parts, all)
	} else {
		subscribers := map[[16]byte][]int{}
		for i, m := range members {
			for _, t := range m.topics {
				subscribers[t] = append(subscribers[t], i)
			}
		}
		for _, t := range sortedIDs(subscribers) {
			parts := make([]consumerTP, 0, len(assignable[t]))
			for _, p := range assignable[t] {
				parts = append(parts, consumerTP{t, p})
			}
			b.balance(parts, subscribers[t])
		}
	}
	out := make(map[string]AssignedPartitions, len(members))
	for i, m := range members {
		out[m.id] = b.out[i]
	}
	return out
}

// simpleBuilder accumulates the result, one balanced set of partitions at a time.
type simpleBuilder struct {
	members []shareAssignee
	out     []AssignedPartitions
}

// balance assigns parts (sorted) among the members subs (indices, ascending), keeping
// what each already had of them as far as balance allows.
func (b *simpleBuilder) balance(parts []consumerTP, subs []int) {
	if len(parts) == 0 || len(subs) == 0 {
		return
	}
	numParts, numSubs := len(parts), len(subs)
	sharing := (numSubs + numParts - 1) / numParts
	x := float64(sharing*numParts) / float64(numSubs)
	want := make(map[int]int, numSubs)
	for k, i := range subs {
		want[i] = int(math.Ceil(x*float64(k+1))) - int(math.Ceil(x*float64(k)))
	}
	holders := make(map[consumerTP][]int, numParts)
	for _, tp := range parts {
		holders[tp] = nil
	}
	held := make(map[int][]consumerTP, numSubs)
	// What each member keeps of its current assignment: only partitions of this set.
	for _, i := range subs {
		cur := b.members[i].current
		for _, t := range sortedTopics(cur) {
			for _, p := range cur[t] {
				tp := consumerTP{t, p}
				if _, ok := holders[tp]; ok {
					holders[tp] = append(holders[tp], i)
					held[i] = append(held[i], tp)
				}
			}
		}
	}
	drop := func(i int, tp consumerTP) {
		held[i] = slices.DeleteFunc(held[i], func(x consumerTP) bool { return x == tp })
		holders[tp] = slices.DeleteFunc(holders[tp], func(x int) bool { return x == i })
	}
	// Members past their count give up their last partitions.
	for _, i := range subs {
		for len(held[i]) > want[i] {
			drop(i, held[i][len(held[i])-1])
		}
	}
	// Partitions past their sharing lose their last holders.
	for _, tp := range parts {
		for len(holders[tp]) > sharing {
			drop(holders[tp][len(holders[tp])-1], tp)
		}
	}
	var unfilled []int
	for _, i := range subs {
		if len(held[i]) < want[i] {
			unfilled = append(unfilled, i)
		}
	}
	// Partitions short of their sharing go to the members short of their count, in
	// turn; a round through the members that places nothing gives the partition up.
	pos, placed := 0, false
	for _, tp := range parts {
		for need := sharing - len(holders[tp]); need > 0 && len(unfilled) > 0; {
			if pos >= len(unfilled) {
				if !placed {
					break
				}
				pos, placed = 0, false
			}
			i := unfilled[pos]
			if slices.Contains(holders[tp], i) {
				pos++
				continue
			}
			holders[tp] = append(holders[tp], i)
			held[i] = append(held[i], tp)
			need--
			placed = true
			if len(held[i]) >= want[i] {
				unfilled = slices.Delete(unfilled, pos, pos+1)
				continue
			}
			pos++
		}
	}
	for _, i := range subs {
		for _, tp := range held[i] {
			assignmentAdd(b.out[i], tp.topic, tp.partition)
		}
	}
}
