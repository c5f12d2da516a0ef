package group

import (
	"testing"
	"time"
)

// staticGroup forms a Stable group of two static members "i1" (the leader) and "i2".
func (h *harness) staticGroup() (ids []string, gen int32) {
	h.t.Helper()
	a := h.join("g", "", withInstance("i1"))
	b := h.join("g", "", withInstance("i2"))
	h.advance(0)
	gen = a.resp.Generation
	h.sync("g", b.resp.MemberID, gen, nil)
	h.sync("g", a.resp.MemberID, gen, map[string]string{a.resp.MemberID: "p0", b.resp.MemberID: "p1"})
	if st := h.state("g"); st != "Stable" {
		h.t.Fatalf("state %s", st)
	}
	return []string{a.resp.MemberID, b.resp.MemberID}, gen
}

func TestStaticMemberRejoinWithoutRebalance(t *testing.T) {
	h := newHarness(t, testConfig())
	ids, gen := h.staticGroup()
	if ids[0] != "i1-uuid1" {
		t.Fatalf("static member id %q, want groupInstanceId-UUID", ids[0])
	}
	// i2 restarts: it joins with no member id and the same instance id and metadata.
	j := h.join("g", "", withInstance("i2"))
	if !j.done() || j.resp.ErrorCode != 0 || j.resp.Generation != gen || j.resp.MemberID == ids[1] {
		t.Fatalf("rejoin %+v", j.resp)
	}
	if st := h.state("g"); st != "Stable" {
		t.Fatalf("state %s, want Stable (no rebalance)", st)
	}
	s := h.sync("g", j.resp.MemberID, gen, nil)
	if !s.done() || s.resp.ErrorCode != 0 || string(s.resp.MemberAssignment) != "p1" {
		t.Fatalf("sync %+v: want the old assignment back", s.resp)
	}
	// The old member id is fenced.
	if code := h.heartbeatStatic("g", ids[1], "i2", gen); code != errFencedInstanceID {
		t.Fatalf("old id heartbeat %d", code)
	}
	// The leader's heartbeat is undisturbed.
	if code := h.heartbeatStatic("g", ids[0], "i1", gen); code != 0 {
		t.Fatalf("leader heartbeat %d", code)
	}
}

func TestStaticMemberChangedProtocolRebalances(t *testing.T) {
	h := newHarness(t, testConfig())
	_, gen := h.staticGroup()
	j := h.join("g", "", withInstance("i2"), withProtocols(protocol("roundrobin", nil), protocol("range", consumerMeta("t"))))
	if st := h.state("g"); st != "Stable" {
		// range stays the only common protocol and the vote is unchanged: no rebalance.
		t.Fatalf("state %s", st)
	}
	if !j.done() || j.resp.Generation != gen {
		t.Fatalf("join %+v", j.resp)
	}
}

func TestStaticMemberSurvivesMissedRejoin(t *testing.T) {
	h := newHarness(t, testConfig())
	ids, gen := h.staticGroup()
	// The leader rejoins, i2 does not: static members are kept past the rebalance timeout.
	j := h.join("g", ids[0], withInstance("i1"))
	for i := 0; i < 4; i++ { // i2 is alive (it heartbeats) but does not rejoin
		h.heartbeatStatic("g", ids[1], "i2", gen)
		h.advance(5 * time.Second)
	}
	if !j.done() || len(j.resp.Members) != 2 {
		t.Fatalf("join %+v", j.resp)
	}
}

func TestStaticMemberLeaveByInstanceID(t *testing.T) {
	h := newHarness(t, testConfig())
	_, _ = h.staticGroup()
	r := h.leaveStatic("g", "i2")
	if r.Members[0].ErrorCode != 0 {
		t.Fatalf("leave %+v", r)
	}
	if r := h.leaveStatic("g", "i9"); r.Members[0].ErrorCode != errUnknownMemberID {
		t.Fatalf("unknown instance %+v", r)
	}
	if len(h.s.groups["g"].members) != 1 {
		t.Fatal("static member not removed")
	}
}

func TestStaticJoinWriteFailureReverts(t *testing.T) {
	h := newHarness(t, testConfig())
	ids, gen := h.staticGroup()
	h.writeCode = errNotCoordinator
	j := h.join("g", "", withInstance("i2"))
	if !j.done() || j.resp.ErrorCode != errNotCoordinator {
		t.Fatalf("join %+v", j.resp)
	}
	h.writeCode = 0
	if code := h.heartbeatStatic("g", ids[1], "i2", gen); code != 0 {
		t.Fatalf("old member id not restored: %d", code)
	}
}

func TestStaticLeaderRejoinSkipsAssignment(t *testing.T) {
	h := newHarness(t, testConfig())
	_, gen := h.staticGroup()
	// The leader restarts with JoinGroup v9 (KIP-814): it gets the members and
	// SkipAssignment, and the generation is unchanged.
	j := h.join("g", "", withInstance("i1"), withVersion(9))
	if !j.done() || j.resp.ErrorCode != 0 || !j.resp.SkipAssignment || len(j.resp.Members) != 2 || j.resp.Generation != gen {
		t.Fatalf("join %+v", j.resp)
	}
	if j.resp.LeaderID != j.resp.MemberID {
		t.Fatalf("leader %q, member %q", j.resp.LeaderID, j.resp.MemberID)
	}
}

func TestStaticMemberNeedsNoMemberIDRoundTrip(t *testing.T) {
	h := newHarness(t, testConfig())
	j := h.join("g", "", withInstance("i1"), withVersion(5))
	h.advance(0)
	if !j.done() || j.resp.ErrorCode != 0 {
		t.Fatalf("static v5 first join %+v: no MEMBER_ID_REQUIRED for static members", j.resp)
	}
}

func TestMemberOfAnotherGroup(t *testing.T) {
	h := newHarness(t, testConfig())
	a, genA := h.stableGroup("a", 1)
	h.stableGroup("b", 1)
	if code := h.heartbeat("b", a[0], genA); code != errUnknownMemberID {
		t.Fatalf("heartbeat with another group's member %d", code)
	}
	if j := h.join("b", a[0]); j.resp.ErrorCode != errUnknownMemberID {
		t.Fatalf("join with another group's member %+v", j.resp)
	}
	if c := h.commit(8, "b", a[0], genA, map[int32]int64{0: 1}); commitCodes(c.resp)[0] != errUnknownMemberID {
		t.Fatalf("commit with another group's member %+v", c.resp)
	}
}
