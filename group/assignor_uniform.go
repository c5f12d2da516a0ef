package group

import (
	"cmp"
	"slices"
)

// UniformAssignor is KIP-848's default server-side assignor, Kafka's
// org.apache.kafka.coordinator.group.assignor.UniformAssignor: it spreads all the
// partitions the group subscribes to as evenly as possible across the members, keeping
// each member's current partitions where balance allows.
//
// With homogeneous subscriptions (every member subscribes to the same topics; Kafka's
// UniformHomogeneousAssignmentBuilder) the result is balanced to within one partition
// and moves no more partitions than balance requires: each member keeps up to its quota
// (total/members, one more for total%members members, given to the members owning
// the most) and only the rest is handed out again.
//
// With heterogeneous subscriptions (Kafka's UniformHeterogeneousAssignmentBuilder)
// every member keeps its still-subscribed partitions, the unowned ones go to the least
// loaded subscriber (topics with the fewest subscribers first), and then partitions
// move from a member to a less loaded subscriber of their topic while that narrows a
// gap of two or more. The result: no partition's owner has two or more partitions more
// than any other subscriber of its topic.
//
// Racks (KIP-881): when members and partitions both carry racks, a partition that has to
// be handed out goes, among the members that can take it without breaking balance, to
// one with a replica in its rack; a member over its quota keeps its same-rack
// partitions first. Racks never cost balance or stickiness. (Kafka 4's uniform
// builders ignore racks; this is the preference KIP-881 gave the client assignors.)
type UniformAssignor struct{}

// Name is "uniform".
func (UniformAssignor) Name() string { return UniformAssignorName }

// Assign computes the target assignment; see UniformAssignor.
func (UniformAssignor) Assign(members []AssignorMember, topics []AssignorTopic) (map[string]AssignedPartitions, error) {
	in, err := prepareAssign(members, topics)
	if err != nil {
		return nil, err
	}
	if in.homogeneous() {
		return in.result(in.uniformHomogeneous()), nil
	}
	return in.result(in.uniformHeterogeneous()), nil
}

// uniformHomogeneous assigns when every member subscribes to the same topics.
func (in *assignInput) uniformHomogeneous() [][]assignedTP {
	n := len(in.members)
	assigned := make([][]assignedTP, n)
	if n == 0 || len(in.members[0].subs) == 0 {
		return assigned
	}
	subs := in.members[0].subs
	total := 0
	for _, t := range subs {
		total += int(in.topics[t].Partitions)
	}
	minQuota, extra := total/n, total%n

	// Extra slots go to the members owning the most, so the fewest partitions move.
	quota := make([]int, n)
	byOwned := make([]int, n)
	for i := range byOwned {
		quota[i] = minQuota
		byOwned[i] = i
	}
	slices.SortStableFunc(byOwned, func(a, b int) int {
		return cmp.Compare(len(in.members[b].owned), len(in.members[a].owned))
	})
	for _, i := range byOwned[:extra] {
		quota[i]++
	}

	// Keep up to the quota (same-rack partitions first); the rest is unassigned.
	kept := make([][]bool, len(in.topics))
	for _, t := range subs {
		kept[t] = make([]bool, in.topics[t].Partitions)
	}
	for i := range in.members {
		m := &in.members[i]
		owned := m.owned
		if len(owned) > quota[i] && m.rack != "" {
			owned = slices.Clone(owned)
			slices.SortStableFunc(owned, func(a, b assignedTP) int {
				return boolFirst(in.rackMatch(m.rack, a), in.rackMatch(m.rack, b))
			})
		}
		keep := owned[:min(len(owned), quota[i])]
		assigned[i] = make([]assignedTP, len(keep), quota[i])
		copy(assigned[i], keep)
		for _, tp := range keep {
			kept[tp.t][tp.p] = true
		}
	}
	var unassigned []assignedTP
	for _, t := range subs {
		for p := range in.topics[t].Partitions {
			if !kept[t][p] {
				unassigned = append(unassigned, assignedTP{t, p})
			}
		}
	}

	unassigned = in.handOutByRack(unassigned, assigned, quota)

	// The rest in order: each member below its quota takes the next run.
	next := 0
	for i := range assigned {
		for len(assigned[i]) < quota[i] && next < len(unassigned) {
			assigned[i] = append(assigned[i], unassigned[next])
			next++
		}
	}
	return assigned
}

// handOutByRack gives each unassigned partition with rack information to a member
// below its quota in one of the partition's racks, and returns the partitions left.
func (in *assignInput) handOutByRack(unassigned []assignedTP, assigned [][]assignedTP, quota []int) []assignedTP {
	// Members with room, by rack, in member order; next[rack] skips the full ones.
	byRack := map[string][]int{}
	for i, m := range in.members {
		if m.rack != "" && len(assigned[i]) < quota[i] {
			byRack[m.rack] = append(byRack[m.rack], i)
		}
	}
	if len(byRack) == 0 {
		return unassigned
	}
	next := map[string]int{}
	left := unassigned[:0]
	for _, tp := range unassigned {
		racks := in.topics[tp.t].PartitionRacks
		placed := false
		if racks != nil {
			for _, r := range racks[tp.p] {
				cands := byRack[r]
				k := next[r]
				for k < len(cands) && len(assigned[cands[k]]) >= quota[cands[k]] {
					k++
				}
				next[r] = k
				if k < len(cands) {
					assigned[cands[k]] = append(assigned[cands[k]], tp)
					placed = true
					break
				}
			}
		}
		if !placed {
			left = append(left, tp)
		}
	}
	return left
}

// uniformHeterogeneous assigns when members subscribe to different topics.
func (in *assignInput) uniformHeterogeneous() [][]assignedTP {
	n := len(in.members)
	assigned := make([][]assignedTP, n)
	subscribers := make([][]int, len(in.topics))
	for i, m := range in.members {
		assigned[i] = slices.Clone(m.owned)
		for _, t := range m.subs {
			subscribers[t] = append(subscribers[t], i)
		}
	}
	owner := make([][]int, len(in.topics))
	for t := range in.topics {
		if len(subscribers[t]) > 0 {
			owner[t] = make([]int, in.topics[t].Partitions)
			for p := range owner[t] {
				owner[t][p] = -1
			}
		}
	}
	for i, list := range assigned {
		for _, tp := range list {
			owner[tp.t][tp.p] = i
		}
	}

	// Unowned partitions, most constrained topics first, to the least loaded subscriber.
	topicOrder := make([]int32, 0, len(in.topics))
	for t := range in.topics {
		if len(subscribers[t]) > 0 {
			topicOrder = append(topicOrder, int32(t))
		}
	}
	slices.SortStableFunc(topicOrder, func(a, b int32) int { return cmp.Compare(len(subscribers[a]), len(subscribers[b])) })
	for _, t := range topicOrder {
		for p := range in.topics[t].Partitions {
			if owner[t][p] >= 0 {
				continue
			}
			tp := assignedTP{t, p}
			i := in.leastLoaded(subscribers[t], assigned, tp, -1)
			assigned[i] = append(assigned[i], tp)
		}
	}

	// Move partitions from a member to a subscriber two or more partitions lighter
	// until no such move is left; every move lowers the sum of squared loads, so this ends.
	order := make([]int, n)
	for moved := true; moved; {
		moved = false
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(len(assigned[b]), len(assigned[a])) })
		// Loads never drop below the lightest subscribing member's, so a member at most
		// one above it (and every member after it in order) has nothing to give.
		minLoad := -1
		for i, m := range in.members {
			if len(m.subs) > 0 && (minLoad < 0 || len(assigned[i]) < minLoad) {
				minLoad = len(assigned[i])
			}
		}
		for _, a := range order {
			if len(assigned[a]) <= minLoad+1 {
				break
			}
			for k := len(assigned[a]) - 1; k >= 0; k-- {
				tp := assigned[a][k]
				b := in.leastLoaded(subscribers[tp.t], assigned, tp, a)
				if b < 0 || len(assigned[b])+1 >= len(assigned[a]) {
					continue
				}
				last := len(assigned[a]) - 1
				assigned[a][k] = assigned[a][last]
				assigned[a] = assigned[a][:last]
				assigned[b] = append(assigned[b], tp)
				moved = true
			}
		}
	}
	return assigned
}

// leastLoaded picks, among candidates other than skip, the member with the fewest
// partitions, preferring one in a rack of tp and then the earliest; -1 if none.
func (in *assignInput) leastLoaded(candidates []int, assigned [][]assignedTP, tp assignedTP, skip int) int {
	best, bestRack := -1, false
	for _, i := range candidates {
		if i == skip {
			continue
		}
		switch {
		case best < 0 || len(assigned[i]) < len(assigned[best]):
			best, bestRack = i, in.rackMatch(in.members[i].rack, tp)
		case len(assigned[i]) == len(assigned[best]) && !bestRack && in.rackMatch(in.members[i].rack, tp):
			best, bestRack = i, true
		}
	}
	return best
}

// boolFirst orders true before false.
func boolFirst(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}
