package group

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDescribeGroup(t *testing.T) {
	h := newHarness(t, testConfig())
	if d := h.s.DescribeGroup("nope", 5, true); d.State != "Dead" || d.ErrorCode != 0 || len(d.Members) != 0 || d.AuthorizedOperations != groupAuthorizedOperations {
		t.Fatalf("unknown group %+v", d)
	}
	if d := h.s.DescribeGroup("nope", 5, false); d.AuthorizedOperations != -2147483648 {
		t.Fatalf("authorized operations not requested: %d", d.AuthorizedOperations)
	}
	ids, _ := h.stableGroup("g", 2)
	// A rebalance hides metadata and assignments, as Kafka.
	h.join("g", ids[0])
	d := h.s.DescribeGroup("g", 5, false)
	if d.State != "PreparingRebalance" || d.Protocol != "" || len(d.Members) != 2 || len(d.Members[0].MemberAssignment) != 0 {
		t.Fatalf("describe during rebalance %+v", d)
	}
}

func TestListGroups(t *testing.T) {
	h := newHarness(t, testConfig())
	h.stableGroup("a", 1)
	h.commit(8, "b", "", -1, map[int32]int64{0: 1})
	all := h.s.ListGroups(nil, nil)
	if len(all) != 2 || all[0].Group != "a" || all[0].GroupState != "Stable" || all[0].ProtocolType != "consumer" ||
		all[1].GroupState != "Empty" || all[1].ProtocolType != "" || all[0].GroupType != "classic" {
		t.Fatalf("list %+v", all)
	}
	if got := h.s.ListGroups([]string{"empty"}, nil); len(got) != 1 || got[0].Group != "b" {
		t.Fatalf("state filter (case-insensitive) %+v", got)
	}
	if got := h.s.ListGroups(nil, []string{"consumer"}); len(got) != 0 {
		t.Fatalf("type filter %+v", got)
	}
	if got := h.s.ListGroups(nil, []string{"Classic"}); len(got) != 2 {
		t.Fatalf("type filter classic %+v", got)
	}
}

func TestDeleteGroup(t *testing.T) {
	h := newHarness(t, testConfig())
	ids, gen := h.stableGroup("g", 1)
	h.commit(8, "g", ids[0], gen, map[int32]int64{0: 1, 1: 2})
	var code int16 = -2
	del := func(id string) int16 {
		code = -2
		h.run(h.s.DeleteGroup(h.now, id, func(c int16) { code = c }))
		return code
	}
	if c := del("g"); c != errNonEmptyGroup {
		t.Fatalf("non-empty %d", c)
	}
	if c := del("nope"); c != errGroupIDNotFound {
		t.Fatalf("unknown %d", c)
	}
	h.leave("g", 3, ids[0])
	n := len(h.log)
	if c := del("g"); c != 0 {
		t.Fatalf("delete %d", c)
	}
	if len(h.log) != n+3 {
		t.Fatalf("%d records, want 2 offset tombstones and a group tombstone", len(h.log)-n)
	}
	for _, r := range h.log[n:] {
		if r.Value != nil {
			t.Fatal("not a tombstone")
		}
	}
	if d := h.s.DescribeGroup("g", 5, false); d.State != "Dead" {
		t.Fatalf("state %s", d.State)
	}
	if got := h.fetched("g", 0); got[0] != -1 {
		t.Fatalf("offsets after delete %v", got)
	}
	if c := del("g"); c != errGroupIDNotFound {
		t.Fatalf("deleted twice %d", c)
	}
	// A failed write keeps the group.
	h.commit(8, "k", "", -1, map[int32]int64{0: 1})
	h.writeCode = errCoordinatorNotAvailable
	if c := del("k"); c != errCoordinatorNotAvailable {
		t.Fatalf("failed delete %d", c)
	}
	if _, ok := h.s.groups["k"]; !ok {
		t.Fatal("group gone after a failed delete")
	}
}

func TestUnloadAnswersParkedRequests(t *testing.T) {
	h := newHarness(t, testConfig())
	ids, gen := h.stableGroup("g", 2)
	j := h.join("g", ids[0]) // parked: PreparingRebalance
	a := h.join("h", "")
	b := h.join("h", "")
	h.advance(0)
	s := h.sync("h", b.resp.MemberID, b.resp.Generation, nil) // parked: CompletingRebalance
	h.run(h.s.Unload())
	if !j.done() || j.resp.ErrorCode != errNotCoordinator || !s.done() || s.resp.ErrorCode != errNotCoordinator {
		t.Fatalf("parked %+v %+v", j.resp, s.resp)
	}
	if len(h.s.groups) != 0 {
		t.Fatal("state kept after unload")
	}
	_ = a
	if code := h.heartbeat("g", ids[1], gen); code != errUnknownMemberID {
		t.Fatalf("heartbeat after unload %d", code)
	}
	if got := h.s.ListGroups(nil, nil); len(got) != 0 {
		t.Fatalf("groups after unload %v", got)
	}
}

// A commit still pending when DeleteGroups starts lies before the tombstones in the log:
// the deletion covers it (Kafka's coordinator deletes the offsets as they stand at the
// log end), and memory agrees with a replay of the log.
func TestDeleteGroupWithPendingCommit(t *testing.T) {
	h := newHarness(t, testConfig())
	h.commit(8, "k", "", -1, map[int32]int64{0: 5})
	h.hold = true
	h.commit(8, "k", "", -1, map[int32]int64{0: 10, 1: 3}) // pending: p0 changes, p1 is new
	var code int16 = -2
	h.run(h.s.DeleteGroup(h.now, "k", func(c int16) { code = c }))
	h.release(0)
	if code != 0 {
		t.Fatalf("delete %d", code)
	}
	r := NewShard(testConfig())
	for _, rec := range h.log {
		if err := r.Replay(rec.Key, rec.Value); err != nil {
			t.Fatal(err)
		}
	}
	replayed := r.OffsetFetch("k", []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0, 1}}}, false)
	got := h.fetched("k", 0, 1)
	for _, p := range replayed.Topics[0].Partitions {
		if p.Offset != got[p.Partition] {
			t.Fatalf("partition %d: memory serves %d, the replayed log %d", p.Partition, got[p.Partition], p.Offset)
		}
	}
	if got[0] != -1 || got[1] != -1 {
		t.Fatalf("offsets after delete %v", got)
	}
	if d := h.s.DescribeGroup("k", 5, false); d.State != "Dead" {
		t.Fatalf("state %s", d.State)
	}
	// A commit appended after the deletion is kept, in memory and in the log.
	h.hold = true
	h.commit(8, "m", "", -1, map[int32]int64{0: 1})
	h.release(0)
	h.hold = true
	h.run(h.s.DeleteGroup(h.now, "m", func(int16) {}))
	h.commit(8, "m", "", -1, map[int32]int64{0: 7})
	h.release(0)
	if got := h.fetched("m", 0); got[0] != 7 {
		t.Fatalf("commit after delete: %v", got)
	}
}
