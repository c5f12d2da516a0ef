package group

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// Property tests of the KIP-848 assignors over seeded random groups: exactly-once
// coverage, subscriptions respected, balance, minimal movement, rack preference and
// determinism.

const propertyRounds = 300

var builtinAssignors = []Assignor{UniformAssignor{}, RangeAssignor{}}

// TestAssignorsCoverEverySubscribedPartitionOnce: whatever the subscriptions and
// however stale or inconsistent the current assignment (duplicates, unsubscribed
// topics, partitions past the count), each subscribed partition gets one subscribed owner.
func TestAssignorsCoverEverySubscribedPartitionOnce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 848))
	for round := range propertyRounds {
		topics := genTopics(r, 1+r.IntN(6), 12, r.IntN(4))
		members := genMembers(r, 1+r.IntN(8), topics, r.IntN(2) == 0, r.IntN(4))
		for i := range members {
			members[i].Current = AssignedPartitions{}
			for range r.IntN(6) {
				tp := topics[r.IntN(len(topics))]
				members[i].Current[tp.ID] = append(members[i].Current[tp.ID], int32(r.IntN(int(tp.Partitions)+3)-1))
			}
		}
		for _, a := range builtinAssignors {
			t.Run(fmt.Sprintf("%s/%d", a.Name(), round), func(t *testing.T) {
				checkAssignment(t, members, topics, mustAssign(t, a, members, topics))
			})
		}
	}
}

// TestUniformHomogeneousBalancedAndMinimalMoves: with one subscription for all, sizes
// differ by at most one, and after members join and leave (and topics grow) the
// survivors keep as many partitions as any balanced assignment could.
func TestUniformHomogeneousBalancedAndMinimalMoves(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 848))
	for round := range propertyRounds {
		nRacks := r.IntN(3)
		topics := genTopics(r, 1+r.IntN(4), 20, nRacks)
		members := genMembers(r, 1+r.IntN(10), topics, true, nRacks)
		out := mustAssign(t, UniformAssignor{}, members, topics)
		checkUniformBalanced(t, round, out)

		// Some leave, some join, some topics grow.
		next := withCurrent(members, out)
		r.Shuffle(len(next), func(i, j int) { next[i], next[j] = next[j], next[i] })
		next = next[:1+r.IntN(len(next))]
		next = append(next, genMembers(r, r.IntN(4), topics, true, nRacks)...)
		for i := range topics {
			if r.IntN(4) == 0 {
				topics[i].Partitions += int32(r.IntN(5))
				if topics[i].PartitionRacks != nil {
					for len(topics[i].PartitionRacks) < int(topics[i].Partitions) {
						topics[i].PartitionRacks = append(topics[i].PartitionRacks, []string{"r0"})
					}
				}
			}
		}
		out2 := mustAssign(t, UniformAssignor{}, next, topics)
		checkAssignment(t, next, topics, out2)
		checkUniformBalanced(t, round, out2)

		total, keptNow := 0, 0
		owned := make([]int, len(next))
		for i, m := range next {
			owned[i] = assignmentSize(m.Current)
			keptNow += kept(m.Current, out2[m.MemberID])
		}
		for _, tp := range topics {
			total += int(tp.Partitions)
		}
		if want := maxKeepable(owned, total); keptNow != want {
			t.Fatalf("round %d: survivors kept %d partitions, a balanced assignment keeps %d", round, keptNow, want)
		}
	}
}

func checkUniformBalanced(t *testing.T, round int, out map[string]AssignedPartitions) {
	t.Helper()
	lo, hi := -1, -1
	for _, a := range out {
		n := assignmentSize(a)
		if lo < 0 || n < lo {
			lo = n
		}
		hi = max(hi, n)
	}
	if hi-lo > 1 {
		t.Fatalf("round %d: sizes from %d to %d", round, lo, hi)
	}
}

// TestUniformHeterogeneousNoImprovingMove: with different subscriptions no partition's
// owner holds two or more partitions more than another subscriber of its topic.
func TestUniformHeterogeneousNoImprovingMove(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 848))
	for round := range propertyRounds {
		topics := genTopics(r, 2+r.IntN(5), 15, r.IntN(3))
		members := genMembers(r, 2+r.IntN(8), topics, false, r.IntN(3))
		out := mustAssign(t, UniformAssignor{}, members, topics)
		checkAssignment(t, members, topics, out)
		// Again after churn, from the previous assignment.
		next := withCurrent(members, out)[:1+r.IntN(len(members))]
		next = append(next, genMembers(r, r.IntN(3), topics, false, 0)...)
		out2 := mustAssign(t, UniformAssignor{}, next, topics)
		checkAssignment(t, next, topics, out2)
		for _, a := range next {
			for id, parts := range out2[a.MemberID] {
				tp := topics[slices.IndexFunc(topics, func(x AssignorTopic) bool { return x.ID == id })]
				for _, b := range next {
					if subscribes(b, tp) && assignmentSize(out2[b.MemberID])+1 < assignmentSize(out2[a.MemberID]) {
						t.Fatalf("round %d: %s holds %d (%s %v), subscriber %s only %d", round, a.MemberID,
							assignmentSize(out2[a.MemberID]), tp.Name, parts, b.MemberID, assignmentSize(out2[b.MemberID]))
					}
				}
			}
		}
	}
}

// TestRangeBalancedPerTopicAndMinimalMoves: per topic the subscribers' counts differ by
// at most one, and after churn each topic keeps as many partitions with their owners
// as a balanced split of that topic could.
func TestRangeBalancedPerTopicAndMinimalMoves(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 848))
	for round := range propertyRounds {
		topics := genTopics(r, 1+r.IntN(5), 16, 0)
		homogeneous := r.IntN(2) == 0
		members := genMembers(r, 1+r.IntN(8), topics, homogeneous, 0)
		out := mustAssign(t, RangeAssignor{}, members, topics)
		checkRangeBalanced(t, round, members, topics, out)

		next := withCurrent(members, out)
		r.Shuffle(len(next), func(i, j int) { next[i], next[j] = next[j], next[i] })
		next = append(next[:1+r.IntN(len(next))], genMembers(r, r.IntN(4), topics, homogeneous, 0)...)
		out2 := mustAssign(t, RangeAssignor{}, next, topics)
		checkAssignment(t, next, topics, out2)
		checkRangeBalanced(t, round, next, topics, out2)
		for _, tp := range topics {
			var owned []int
			keptNow := 0
			for _, m := range next {
				if subscribes(m, tp) {
					owned = append(owned, len(m.Current[tp.ID]))
					keptNow += kept(AssignedPartitions{tp.ID: m.Current[tp.ID]}, out2[m.MemberID])
				}
			}
			if len(owned) > 0 && keptNow != maxKeepable(owned, int(tp.Partitions)) {
				t.Fatalf("round %d: %s kept %d, a balanced split keeps %d", round, tp.Name, keptNow, maxKeepable(owned, int(tp.Partitions)))
			}
		}
	}
}

func checkRangeBalanced(t *testing.T, round int, members []AssignorMember, topics []AssignorTopic, out map[string]AssignedPartitions) {
	t.Helper()
	checkAssignment(t, members, topics, out)
	for _, tp := range topics {
		lo, hi := -1, -1
		for _, m := range members {
			if subscribes(m, tp) {
				n := len(out[m.MemberID][tp.ID])
				if lo < 0 || n < lo {
					lo = n
				}
				hi = max(hi, n)
			}
		}
		if hi-lo > 1 {
			t.Fatalf("round %d: %s split from %d to %d", round, tp.Name, lo, hi)
		}
	}
}

// TestAssignorsDeterministic: the order of members, topics, subscriptions and map
// insertion changes nothing, and assigning again from the result changes nothing.
func TestAssignorsDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 848))
	for round := range propertyRounds / 3 {
		topics := genTopics(r, 1+r.IntN(5), 12, r.IntN(3))
		members := genMembers(r, 1+r.IntN(8), topics, r.IntN(2) == 0, r.IntN(3))
		for _, a := range builtinAssignors {
			out := mustAssign(t, a, members, topics)
			members2 := withCurrent(members, out)
			out2 := mustAssign(t, a, members2, topics)
			if !reflect.DeepEqual(out, out2) {
				t.Fatalf("round %d %s: not stable when assigned from its own result:\n%v\n%v", round, a.Name(), out, out2)
			}
			for range 3 {
				shuffled := slices.Clone(members2)
				r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
				for i := range shuffled {
					cur := AssignedPartitions{}
					keys := slices.Collect(maps.Keys(shuffled[i].Current))
					r.Shuffle(len(keys), func(x, y int) { keys[x], keys[y] = keys[y], keys[x] })
					for _, k := range keys {
						cur[k] = shuffled[i].Current[k]
					}
					shuffled[i].Current = cur
					shuffled[i].TopicIDs = slices.Clone(shuffled[i].TopicIDs)
					slices.Reverse(shuffled[i].TopicIDs)
				}
				topics2 := slices.Clone(topics)
				r.Shuffle(len(topics2), func(i, j int) { topics2[i], topics2[j] = topics2[j], topics2[i] })
				if got := mustAssign(t, a, shuffled, topics2); !reflect.DeepEqual(out, got) {
					t.Fatalf("round %d %s: order changed the result", round, a.Name())
				}
			}
		}
	}
}

// TestUniformRackAware: where members and partitions can be matched rack for rack
// without breaking balance, every partition goes to a member in one of its racks.
func TestUniformRackAware(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 848))
	for round := range propertyRounds / 3 {
		nRacks := 1 + r.IntN(4)
		perRack := 1 + r.IntN(3)
		n := nRacks * perRack
		var members []AssignorMember
		for i := range n {
			members = append(members, AssignorMember{MemberID: fmt.Sprintf("m%03d", r.IntN(1000)*100+i), Rack: fmt.Sprintf("r%d", i%nRacks)})
		}
		// Partition p's replicas: rack p%nRacks plus a rack no member is in.
		var topics []AssignorTopic
		for i := range 1 + r.IntN(3) {
			parts := int32(n * (1 + r.IntN(3)))
			tp := AssignorTopic{ID: testTopicID(i), Name: fmt.Sprintf("t%d", i), Partitions: parts}
			for p := range parts {
				tp.PartitionRacks = append(tp.PartitionRacks, []string{"elsewhere", fmt.Sprintf("r%d", int(p)%nRacks)})
			}
			topics = append(topics, tp)
			for m := range members {
				members[m].TopicIDs = append(members[m].TopicIDs, tp.ID)
			}
		}
		out := mustAssign(t, UniformAssignor{}, members, topics)
		checkAssignment(t, members, topics, out)
		checkUniformBalanced(t, round, out)
		for _, m := range members {
			for id, parts := range out[m.MemberID] {
				tp := topics[int(id[15])]
				for _, p := range parts {
					if !slices.Contains(tp.PartitionRacks[p], m.Rack) {
						t.Fatalf("round %d: %s-%d (racks %v) went to %s in %s", round, tp.Name, p, tp.PartitionRacks[p], m.MemberID, m.Rack)
					}
				}
			}
		}
	}
}

// TestRangeCoPartitioned: topics with the same partition count and subscribers are
// assigned alike, and a fresh assignment gives each member one contiguous range.
func TestRangeCoPartitioned(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 848))
	for round := range propertyRounds / 3 {
		parts := int32(1 + r.IntN(20))
		topics := []AssignorTopic{
			{ID: testTopicID(1), Name: "orders", Partitions: parts},
			{ID: testTopicID(2), Name: "payments", Partitions: parts},
		}
		members := genMembers(r, 1+r.IntN(8), topics, true, 0)
		out := mustAssign(t, RangeAssignor{}, members, topics)
		for round2 := range 2 {
			for _, m := range members {
				a, b := out[m.MemberID][topics[0].ID], out[m.MemberID][topics[1].ID]
				if !slices.Equal(a, b) {
					t.Fatalf("round %d/%d: %s got orders %v, payments %v", round, round2, m.MemberID, a, b)
				}
				if round2 == 0 && len(a) > 0 && int(a[len(a)-1]-a[0]) != len(a)-1 {
					t.Fatalf("round %d: %s got a broken range %v", round, m.MemberID, a)
				}
			}
			// After churn the topics stay aligned.
			members = append(withCurrent(members, out)[:1+r.IntN(len(members))], genMembers(r, r.IntN(3), topics, true, 0)...)
			out = mustAssign(t, RangeAssignor{}, members, topics)
		}
	}
}
