package group

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// Helpers for the assignor tests: seeded random groups and the checks every
// assignment must pass.

func testTopicID(i int) [16]byte {
	var id [16]byte
	id[0], id[15] = byte(i>>8), byte(i)
	return id
}

// genTopics makes n topics of 1..maxParts partitions; with racks, each partition has
// one to three replicas in racks "r0".."r<nRacks-1>".
func genTopics(r *rand.Rand, n, maxParts, nRacks int) []AssignorTopic {
	topics := make([]AssignorTopic, n)
	for i := range topics {
		topics[i] = AssignorTopic{ID: testTopicID(i), Name: fmt.Sprintf("t%02d", i), Partitions: int32(1 + r.IntN(maxParts))}
		if nRacks > 0 {
			topics[i].PartitionRacks = make([][]string, topics[i].Partitions)
			for p := range topics[i].PartitionRacks {
				for range 1 + r.IntN(3) {
					topics[i].PartitionRacks[p] = append(topics[i].PartitionRacks[p], fmt.Sprintf("r%d", r.IntN(nRacks)))
				}
			}
		}
	}
	return topics
}

// genMembers makes n members; homogeneous ones all subscribe to every topic (half by
// id, half by name), heterogeneous ones to a random non-empty subset.
func genMembers(r *rand.Rand, n int, topics []AssignorTopic, homogeneous bool, nRacks int) []AssignorMember {
	members := make([]AssignorMember, n)
	for i := range members {
		m := &members[i]
		m.MemberID = fmt.Sprintf("m%04d-%d", r.IntN(10000), i)
		if nRacks > 0 {
			m.Rack = fmt.Sprintf("r%d", r.IntN(nRacks))
		}
		for j, t := range topics {
			if !homogeneous && r.IntN(2) == 0 && !(j == len(topics)-1 && len(m.TopicIDs)+len(m.TopicNames) == 0) {
				continue
			}
			if r.IntN(2) == 0 {
				m.TopicIDs = append(m.TopicIDs, t.ID)
			} else {
				m.TopicNames = append(m.TopicNames, t.Name)
			}
		}
	}
	return members
}

// subscribes reports whether m subscribes to t.
func subscribes(m AssignorMember, t AssignorTopic) bool {
	return slices.Contains(m.TopicIDs, t.ID) || slices.Contains(m.TopicNames, t.Name)
}

// checkAssignment asserts the invariants of every assignor: an entry per member,
// ascending partition lists, only subscribed topics, and every partition of a
// subscribed topic owned by exactly one member.
func checkAssignment(t *testing.T, members []AssignorMember, topics []AssignorTopic, out map[string]AssignedPartitions) {
	t.Helper()
	if len(out) != len(members) {
		t.Fatalf("%d members, %d assignments", len(members), len(out))
	}
	byID := map[[16]byte]AssignorTopic{}
	for _, tp := range topics {
		byID[tp.ID] = tp
	}
	owners := map[[16]byte][]int{}
	for _, m := range members {
		a, ok := out[m.MemberID]
		if !ok {
			t.Fatalf("member %s has no assignment", m.MemberID)
		}
		for id, parts := range a {
			tp, known := byID[id]
			if !known || !subscribes(m, tp) {
				t.Fatalf("member %s assigned topic %x it does not subscribe to", m.MemberID, id)
			}
			if len(parts) == 0 || !slices.IsSorted(parts) {
				t.Fatalf("member %s: partitions of %s empty or unsorted: %v", m.MemberID, tp.Name, parts)
			}
			if owners[id] == nil {
				owners[id] = make([]int, tp.Partitions)
			}
			for _, p := range parts {
				if p < 0 || p >= tp.Partitions {
					t.Fatalf("member %s: %s-%d out of range", m.MemberID, tp.Name, p)
				}
				owners[id][p]++
			}
		}
	}
	for _, tp := range topics {
		subscribed := slices.ContainsFunc(members, func(m AssignorMember) bool { return subscribes(m, tp) })
		for p := range tp.Partitions {
			n := 0
			if owners[tp.ID] != nil {
				n = owners[tp.ID][p]
			}
			if subscribed && n != 1 || !subscribed && n != 0 {
				t.Fatalf("%s-%d assigned %d times (subscribed %v)", tp.Name, p, n, subscribed)
			}
		}
	}
}

func assignmentSize(a AssignedPartitions) int {
	n := 0
	for _, parts := range a {
		n += len(parts)
	}
	return n
}

// kept counts the partitions of current that next keeps.
func kept(current, next AssignedPartitions) int {
	n := 0
	for id, parts := range current {
		for _, p := range parts {
			if slices.Contains(next[id], p) {
				n++
			}
		}
	}
	return n
}

// maxKeepable is the most partitions that members owning owned[i] can keep when
// total partitions are spread to within one over len(owned) members.
func maxKeepable(owned []int, total int) int {
	q, extra := total/len(owned), total%len(owned)
	keep, over := 0, 0
	for _, o := range owned {
		keep += min(o, q)
		if o > q {
			over++
		}
	}
	return keep + min(extra, over)
}

// withCurrent copies members, setting each one's Current from out (survivors keep
// their assignment, new members start empty).
func withCurrent(members []AssignorMember, out map[string]AssignedPartitions) []AssignorMember {
	next := slices.Clone(members)
	for i := range next {
		next[i].Current = out[next[i].MemberID]
	}
	return next
}

func mustAssign(t testing.TB, a Assignor, members []AssignorMember, topics []AssignorTopic) map[string]AssignedPartitions {
	t.Helper()
	out, err := a.Assign(members, topics)
	if err != nil {
		t.Fatalf("%s: %v", a.Name(), err)
	}
	return out
}
