package group

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func simpleMembers(topicsByMember map[string][]int) []shareAssignee {
	var out []shareAssignee
	for id, ts := range topicsByMember {
		a := shareAssignee{id: id, current: AssignedPartitions{}}
		for _, t := range ts {
			a.topics = append(a.topics, testTopicID(t))
		}
		out = append(out, a)
	}
	return out
}

func partitionsOf(n int32) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

// Kafka's distribution: ceil(M/P) members per partition, and member counts that
// differ by at most one.
func TestSimpleAssignorDistribution(t *testing.T) {
	for _, c := range []struct {
		members, partitions int
		counts              map[string]int
		sharing             int
	}{
		{3, 1, map[string]int{"m0": 1, "m1": 1, "m2": 1}, 3},
		{4, 2, map[string]int{"m0": 1, "m1": 1, "m2": 1, "m3": 1}, 2},
		{2, 5, map[string]int{"m0": 3, "m1": 2}, 1},
		{3, 2, map[string]int{"m0": 2, "m1": 1, "m2": 1}, 2},
	} {
		subs := map[string][]int{}
		for i := range c.members {
			subs[fmt.Sprintf("m%d", i)] = []int{1}
		}
		got := simpleAssign(simpleMembers(subs), map[[16]byte][]int32{testTopicID(1): partitionsOf(int32(c.partitions))})
		holders := map[int32]int{}
		for id, a := range got {
			if countPartitions(a) != c.counts[id] {
				t.Errorf("%d members, %d partitions: %s holds %v, want %d", c.members, c.partitions, id, a, c.counts[id])
			}
			for _, p := range a[testTopicID(1)] {
				holders[p]++
			}
		}
		for p := range int32(c.partitions) {
			if holders[p] < 1 || holders[p] > c.sharing {
				t.Errorf("%d members, %d partitions: partition %d has %d members", c.members, c.partitions, p, holders[p])
			}
		}
	}
}

// Members subscribed to different topics are balanced topic by topic.
func TestSimpleAssignorHeterogeneous(t *testing.T) {
	got := simpleAssign(simpleMembers(map[string][]int{"m1": {1}, "m2": {2}, "m3": {1, 2}}),
		map[[16]byte][]int32{testTopicID(1): {0, 1}, testTopicID(2): {0, 1}})
	for id, want := range map[string][2]int{"m1": {1, 0}, "m2": {0, 1}, "m3": {1, 1}} {
		if len(got[id][testTopicID(1)]) != want[0] || len(got[id][testTopicID(2)]) != want[1] {
			t.Errorf("%s holds %v, want %d of a and %d of b", id, got[id], want[0], want[1])
		}
	}
}

// Only assignable partitions (those with share state) are assigned, and a member
// keeps what balance lets it keep.
func TestSimpleAssignorAssignableAndSticky(t *testing.T) {
	members := simpleMembers(map[string][]int{"m1": {1}, "m2": {1}})
	got := simpleAssign(members, map[[16]byte][]int32{testTopicID(1): {1, 3}})
	for id, a := range got {
		for _, p := range a[testTopicID(1)] {
			if p != 1 && p != 3 {
				t.Fatalf("%s got unassignable partition %d", id, p)
			}
		}
	}
	for i := range members {
		members[i].current = AssignedPartitions{testTopicID(1): {3}}
	}
	members[0].id, members[1].id = "m1", "m2"
	got = simpleAssign(members, map[[16]byte][]int32{testTopicID(1): {0, 1, 2, 3}})
	if !assignmentContains(got["m1"], testTopicID(1), 3) {
		t.Fatalf("m1 lost its partition: %v", got)
	}
}

// The assignor on random groups: every assignable partition of a subscribed topic
// has a subscribed member and at most its sharing, members hold only what they
// subscribe to, and assigning again from the result changes nothing.
func TestSimpleAssignorProperty(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		assignable := map[[16]byte][]int32{}
		for tpc := 1; tpc <= 3; tpc++ {
			for p := range int32(1 + r.IntN(6)) {
				if r.IntN(5) > 0 {
					assignable[testTopicID(tpc)] = append(assignable[testTopicID(tpc)], p)
				}
			}
		}
		subs := map[string][]int{}
		for i := range 1 + r.IntN(8) {
			var ts []int
			for tpc := 1; tpc <= 3; tpc++ {
				if r.IntN(2) == 0 || (tpc == 3 && len(ts) == 0) {
					ts = append(ts, tpc)
				}
			}
			subs[fmt.Sprintf("m%d", i)] = ts
		}
		members := simpleMembers(subs)
		for i := range members {
			for _, tid := range members[i].topics {
				for _, p := range assignable[tid] {
					if r.IntN(3) == 0 {
						assignmentAdd(members[i].current, tid, p)
					}
				}
			}
		}
		got := simpleAssign(members, assignable)
		holders := map[consumerTP]int{}
		for _, m := range members {
			for tid, ps := range got[m.id] {
				if !containsID(m.topics, tid) {
					t.Fatalf("seed %d: %s holds unsubscribed topic %x", seed, m.id, tid[15])
				}
				for _, p := range ps {
					holders[consumerTP{tid, p}]++
				}
			}
		}
		for tid, ps := range assignable {
			n := 0
			for _, m := range members {
				if containsID(m.topics, tid) {
					n++
				}
			}
			for _, p := range ps {
				if h := holders[consumerTP{tid, p}]; n > 0 && (h < 1 || h > (n+len(ps)-1)/len(ps)) {
					t.Fatalf("seed %d: partition %x-%d has %d of %d subscribers", seed, tid[15], p, h, n)
				}
			}
		}
		for i := range members {
			members[i].current = got[members[i].id]
		}
		again := simpleAssign(members, assignable)
		for id := range got {
			if !assignmentsEqual(got[id], again[id]) {
				t.Fatalf("seed %d: not stable: %s %v then %v", seed, id, got[id], again[id])
			}
		}
	}
}

func containsID(ids [][16]byte, id [16]byte) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// BenchmarkSimpleAssign is one target assignment of a full share group
// (group.share.max.size, 200 members) over 3 topics of 32 partitions, from a current one.
func BenchmarkSimpleAssign(b *testing.B) {
	subs := map[string][]int{}
	for i := range 200 {
		subs[fmt.Sprintf("member-%03d", i)] = []int{1, 2, 3}
	}
	assignable := map[[16]byte][]int32{testTopicID(1): partitionsOf(32), testTopicID(2): partitionsOf(32), testTopicID(3): partitionsOf(32)}
	members := simpleMembers(subs)
	first := simpleAssign(members, assignable)
	for i := range members {
		members[i].current = first[members[i].id]
	}
	members = members[1:] // one member left
	b.ResetTimer()
	for range b.N {
		simpleAssign(members, assignable)
	}
}
