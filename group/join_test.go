package group

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestJoinSyncStable(t *testing.T) {
	h := newHarness(t, testConfig())
	ids, gen := h.stableGroup("g", 2)
	if gen != 1 {
		t.Fatalf("generation %d, want 1", gen)
	}
	if ids[0] != "client-uuid1" {
		t.Fatalf("leader %q, want client-uuid1 (clientId-UUID)", ids[0])
	}
	d := h.s.DescribeGroup("g", 5, false)
	if d.Protocol != "range" || d.ProtocolType != "consumer" || len(d.Members) != 2 {
		t.Fatalf("describe %+v", d)
	}
	for _, m := range d.Members {
		if string(m.MemberAssignment) != "a-"+m.MemberID || m.ClientHost != "/127.0.0.1" {
			t.Fatalf("member %+v", m)
		}
	}
	// The leader's SyncGroup wrote the group metadata with the assignment.
	last := h.log[len(h.log)-1]
	k, known, err := decodeKey(last.Key)
	if err != nil || !known || k.keyType != keyTypeGroupMetadata {
		t.Fatalf("last record key %v %v %v", k, known, err)
	}
	v, err := decodeGroupMetadataValue(last.Value)
	if err != nil || v.generation != 1 || len(v.members) != 2 || string(v.members[0].assignment) != "a-"+ids[0] {
		t.Fatalf("group metadata %+v %v", v, err)
	}
	for _, id := range ids {
		if code := h.heartbeat("g", id, gen); code != 0 {
			t.Fatalf("heartbeat %d", code)
		}
	}
}

func TestJoinMemberIDRequired(t *testing.T) {
	h := newHarness(t, testConfig())
	first := h.join("g", "", withVersion(4))
	if !first.done() || first.resp.ErrorCode != errMemberIDRequired || first.resp.MemberID != "client-uuid1" {
		t.Fatalf("first join %+v", first.resp)
	}
	// The pending member id is known: a rejoin with it enters the group.
	second := h.join("g", first.resp.MemberID, withVersion(4))
	h.advance(0)
	if !second.done() || second.resp.ErrorCode != 0 || second.resp.LeaderID != "client-uuid1" || len(second.resp.Members) != 1 {
		t.Fatalf("second join %+v", second.resp)
	}
	// A pending member that never rejoins expires after its session timeout.
	third := h.join("g2", "", withVersion(4))
	if third.resp.ErrorCode != errMemberIDRequired {
		t.Fatalf("third %+v", third.resp)
	}
	if len(h.s.groups["g2"].pending) != 1 {
		t.Fatal("pending member not kept")
	}
	h.advance(11 * time.Second)
	if len(h.s.groups["g2"].pending) != 0 {
		t.Fatal("pending member not expired")
	}
}

func TestJoinErrors(t *testing.T) {
	h := newHarness(t, testConfig())
	ids, gen := h.stableGroup("g", 1)
	for _, tc := range []struct {
		name     string
		group    string
		memberID string
		opts     []joinOpt
		want     int16
	}{
		{"empty group id", "", "", nil, errInvalidGroupID},
		{"session below min", "g", "", []joinOpt{withSession(5999)}, errInvalidSessionTimeout},
		{"session above max", "g", "", []joinOpt{withSession(1800001)}, errInvalidSessionTimeout},
		{"unknown member of unknown group", "nope", "m-1", nil, errUnknownMemberID},
		{"unknown member id", "g", "someone-else", nil, errUnknownMemberID},
		{"protocol type mismatch", "g", "", []joinOpt{withProtocolType("connect")}, errInconsistentProtocol},
		{"no common protocol", "g", "", []joinOpt{withProtocols(protocol("roundrobin", nil))}, errInconsistentProtocol},
		{"empty protocol type on new group", "new", "", []joinOpt{withProtocolType("")}, errInconsistentProtocol},
		{"no protocols on new group", "new", "", []joinOpt{withProtocols()}, errInconsistentProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := h.join(tc.group, tc.memberID, tc.opts...)
			if !b.done() || b.resp.ErrorCode != tc.want {
				t.Fatalf("got %+v, want code %d", b.resp, tc.want)
			}
		})
	}
	if _, ok := h.s.groups["new"]; ok {
		t.Fatal("a failed join left a group behind")
	}
	if st := h.state("g"); st != "Stable" {
		t.Fatalf("state %s after rejected joins", st)
	}
	_ = ids
	_ = gen
}

func TestRebalanceOnThirdMember(t *testing.T) {
	h := newHarness(t, testConfig())
	ids, gen := h.stableGroup("g", 2)
	third := h.join("g", "")
	if third.done() {
		t.Fatal("a new member's join must wait for the others to rejoin")
	}
	if st := h.state("g"); st != "PreparingRebalance" {
		t.Fatalf("state %s", st)
	}
	// Members heartbeating now learn of the rebalance.
	if code := h.heartbeat("g", ids[1], gen); code != errRebalanceInProgress {
		t.Fatalf("heartbeat during rebalance %d", code)
	}
	if b := h.sync("g", ids[1], gen, nil); b.resp.ErrorCode != errRebalanceInProgress {
		t.Fatalf("sync during rebalance %d", b.resp.ErrorCode)
	}
	j0 := h.join("g", ids[0])
	j1 := h.join("g", ids[1])
	if !j0.done() || !j1.done() || !third.done() {
		t.Fatal("join phase did not complete when every member rejoined")
	}
	if j0.resp.Generation != gen+1 || len(j0.resp.Members) != 3 || len(j1.resp.Members) != 0 {
		t.Fatalf("leader %+v follower %+v", j0.resp, j1.resp)
	}
	if st := h.state("g"); st != "CompletingRebalance" {
		t.Fatalf("state %s", st)
	}
	// CompletingRebalance: heartbeats succeed, commits are REBALANCE_IN_PROGRESS, an old
	// generation is ILLEGAL_GENERATION.
	if code := h.heartbeat("g", ids[1], gen+1); code != 0 {
		t.Fatalf("heartbeat %d", code)
	}
	if code := h.heartbeat("g", ids[1], gen); code != errIllegalGeneration {
		t.Fatalf("old generation heartbeat %d", code)
	}
	if c := h.commit(8, "g", ids[1], gen+1, map[int32]int64{0: 1}); commitCodes(c.resp)[0] != errRebalanceInProgress {
		t.Fatalf("commit %+v", c.resp)
	}
	if b := h.sync("g", ids[1], gen, nil); b.resp.ErrorCode != errIllegalGeneration {
		t.Fatalf("old generation sync %d", b.resp.ErrorCode)
	}
	s1 := h.sync("g", ids[1], gen+1, nil)
	if s1.done() {
		t.Fatal("follower sync answered before the leader's")
	}
	s0 := h.sync("g", ids[0], gen+1, map[string]string{ids[0]: "x", ids[1]: "y"})
	if !s0.done() || !s1.done() || string(s1.resp.MemberAssignment) != "y" {
		t.Fatalf("syncs %+v %+v", s0.resp, s1.resp)
	}
	// The third member has not synced: it is given an empty assignment when it does.
	s2 := h.sync("g", third.resp.MemberID, gen+1, nil)
	if !s2.done() || s2.resp.ErrorCode != 0 || len(s2.resp.MemberAssignment) != 0 {
		t.Fatalf("third sync %+v", s2.resp)
	}
}

func TestMissedRejoinRemovesDynamicMember(t *testing.T) {
	h := newHarness(t, testConfig())
	ids, gen := h.stableGroup("g", 2)
	j0 := h.join("g", ids[0]) // the leader rejoins: a rebalance
	if j0.done() {
		t.Fatal("answered before the rebalance timeout")
	}
	h.heartbeat("g", ids[1], gen)
	h.advance(20 * time.Second) // the rebalance timeout
	if !j0.done() || j0.resp.Generation != gen+1 || len(j0.resp.Members) != 1 {
		t.Fatalf("join %+v", j0.resp)
	}
	if code := h.heartbeat("g", ids[1], gen); code != errUnknownMemberID {
		t.Fatalf("removed member heartbeat %d", code)
	}
}

func TestMissedSyncRemovesMember(t *testing.T) {
	h := newHarness(t, testConfig())
	a := h.join("g", "")
	b := h.join("g", "")
	h.advance(0)
	gen := a.resp.Generation
	h.sync("g", a.resp.MemberID, gen, map[string]string{a.resp.MemberID: "x", b.resp.MemberID: "y"})
	if st := h.state("g"); st != "Stable" {
		t.Fatalf("state %s", st)
	}
	for i := 0; i < 4; i++ { // b never syncs; a heartbeats
		h.advance(5 * time.Second)
		h.heartbeat("g", a.resp.MemberID, gen)
	}
	if _, ok := h.s.groups["g"].members[b.resp.MemberID]; ok {
		t.Fatal("member that missed SyncGroup still in the group")
	}
	if st := h.state("g"); st != "PreparingRebalance" {
		t.Fatalf("state %s, want PreparingRebalance", st)
	}
}

func TestSessionExpiry(t *testing.T) {
	h := newHarness(t, testConfig())
	ids, gen := h.stableGroup("g", 2)
	for i := 0; i < 5; i++ {
		h.advance(5 * time.Second)
		h.heartbeat("g", ids[0], gen)
	}
	// ids[1] never heartbeated: expired after 10 s; the group rebalances.
	if _, ok := h.s.groups["g"].members[ids[1]]; ok {
		t.Fatal("member with an expired session still in the group")
	}
	if code := h.heartbeat("g", ids[0], gen); code != errRebalanceInProgress {
		t.Fatalf("survivor heartbeat %d", code)
	}
	j := h.join("g", ids[0])
	if !j.done() || j.resp.Generation != gen+1 {
		t.Fatalf("rejoin %+v", j.resp)
	}
}

func TestInitialRebalanceDelay(t *testing.T) {
	cfg := testConfig()
	cfg.InitialRebalanceDelay = DefaultConfig().InitialRebalanceDelay // 3 s
	h := newHarness(t, cfg)
	a := h.join("g", "")
	h.advance(2 * time.Second)
	b := h.join("g", "") // at 3 s the delay is extended by another 3 s
	h.advance(2500 * time.Millisecond)
	if a.done() {
		t.Fatal("join completed during the initial delay")
	}
	h.advance(2 * time.Second)
	if !a.done() || !b.done() || len(a.resp.Members)+len(b.resp.Members) != 2 {
		t.Fatalf("joins %+v %+v", a.resp, b.resp)
	}
}

func TestLeaveGroup(t *testing.T) {
	h := newHarness(t, testConfig())
	ids, gen := h.stableGroup("g", 3)
	// v0-2: one member, top-level error.
	if r := h.leave("g", 1, "unknown"); r.ErrorCode != errUnknownMemberID || r.Members != nil {
		t.Fatalf("v1 unknown %+v", r)
	}
	if r := h.leave("g", 1, ids[2]); r.ErrorCode != 0 {
		t.Fatalf("v1 leave %+v", r)
	}
	if st := h.state("g"); st != "PreparingRebalance" {
		t.Fatalf("state %s", st)
	}
	// v3+: per-member errors.
	r := h.leave("g", 3, ids[1], "unknown")
	if r.ErrorCode != 0 || len(r.Members) != 2 || r.Members[0].ErrorCode != 0 || r.Members[1].ErrorCode != errUnknownMemberID {
		t.Fatalf("v3 leave %+v", r)
	}
	j := h.join("g", ids[0])
	if !j.done() || j.resp.Generation != gen+1 || len(j.resp.Members) != 1 {
		t.Fatalf("rejoin %+v", j.resp)
	}
	if r := h.leave("nope", 3, "m"); r.Members[0].ErrorCode != errUnknownMemberID {
		t.Fatalf("unknown group %+v", r)
	}
	if r := h.leave("", 1, "m"); r.ErrorCode != errInvalidGroupID {
		t.Fatalf("empty group id %+v", r)
	}
	// The last member leaving empties the group, which writes its metadata.
	h.sync("g", ids[0], gen+1, map[string]string{ids[0]: "x"})
	n := len(h.log)
	h.leave("g", 3, ids[0])
	if st := h.state("g"); st != "Empty" {
		t.Fatalf("state %s", st)
	}
	if len(h.log) != n+1 {
		t.Fatalf("no group metadata written on Empty")
	}
}

func TestGroupMaxSize(t *testing.T) {
	cfg := testConfig()
	cfg.MaxSize = 2
	h := newHarness(t, cfg)
	h.stableGroup("g", 2)
	b := h.join("g", "")
	if !b.done() || b.resp.ErrorCode != errGroupMaxSizeReached {
		t.Fatalf("third join %+v", b.resp)
	}
}

func TestProtocolSelection(t *testing.T) {
	h := newHarness(t, testConfig())
	a := h.join("g", "", withProtocols(protocol("cooperative-sticky", []byte("a1")), protocol("range", []byte("a2"))))
	b := h.join("g", "", withProtocols(protocol("range", []byte("b2")), protocol("cooperative-sticky", []byte("b1"))))
	c := h.join("g", "", withProtocols(protocol("cooperative-sticky", []byte("c1")), protocol("range", []byte("c2"))))
	h.advance(0)
	for _, r := range []*box[kmsg.JoinGroupResponse]{a, b, c} {
		if !r.done() || r.resp.Protocol == nil || *r.resp.Protocol != "cooperative-sticky" {
			t.Fatalf("protocol %+v", r.resp)
		}
	}
	// The leader gets each member's metadata for the selected protocol.
	for _, m := range a.resp.Members {
		if m.MemberID == b.resp.MemberID && string(m.ProtocolMetadata) != "b1" {
			t.Fatalf("member metadata %q", m.ProtocolMetadata)
		}
	}
}

func TestSyncErrors(t *testing.T) {
	h := newHarness(t, testConfig())
	ids, gen := h.stableGroup("g", 1)
	rt := "connect"
	for _, tc := range []struct {
		name string
		req  func(*kmsg.SyncGroupRequest)
		want int16
	}{
		{"unknown group", func(r *kmsg.SyncGroupRequest) { r.Group = "nope" }, errUnknownMemberID},
		{"empty group id", func(r *kmsg.SyncGroupRequest) { r.Group = "" }, errInvalidGroupID},
		{"unknown member", func(r *kmsg.SyncGroupRequest) { r.MemberID = "x" }, errUnknownMemberID},
		{"wrong generation", func(r *kmsg.SyncGroupRequest) { r.Generation = gen + 5 }, errIllegalGeneration},
		{"protocol type", func(r *kmsg.SyncGroupRequest) { r.ProtocolType = &rt }, errInconsistentProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := kmsg.NewPtrSyncGroupRequest()
			req.Version = 5
			req.Group, req.MemberID, req.Generation = "g", ids[0], gen
			tc.req(req)
			b := &box[kmsg.SyncGroupResponse]{}
			h.run(h.s.SyncGroup(h.now, req, b.send))
			if !b.done() || b.resp.ErrorCode != tc.want {
				t.Fatalf("got %+v, want %d", b.resp, tc.want)
			}
		})
	}
}

// A member leaving while its SyncGroup is parked gets an answer (UNKNOWN_MEMBER_ID)
// rather than none; the rest are told REBALANCE_IN_PROGRESS.
func TestLeaveAnswersParkedSync(t *testing.T) {
	h := newHarness(t, testConfig())
	a := h.join("g", "")
	b := h.join("g", "")
	h.advance(0)
	gen := a.resp.Generation
	follower := h.sync("g", b.resp.MemberID, gen, nil)
	h.hold = true
	leader := h.sync("g", a.resp.MemberID, gen, map[string]string{a.resp.MemberID: "x", b.resp.MemberID: "y"})
	h.leave("g", 3, b.resp.MemberID)
	if !follower.done() || follower.resp.ErrorCode != errUnknownMemberID {
		t.Fatalf("leaving member's sync %+v", follower.resp)
	}
	if !leader.done() || leader.resp.ErrorCode != errRebalanceInProgress {
		t.Fatalf("leader's sync %+v", leader.resp)
	}
	h.release(0) // the assignment's write completes for a generation that is over
	if st := h.state("g"); st != "PreparingRebalance" {
		t.Fatalf("state %s", st)
	}
}

// A protocol listed twice by one member does not count as supported by two.
func TestDuplicateProtocolNames(t *testing.T) {
	h := newHarness(t, testConfig())
	h.join("g", "", withProtocols(protocol("a", nil), protocol("a", nil)))
	if n := h.s.groups["g"].supportedProtocols["a"]; n != 1 {
		t.Fatalf("protocol a counted %d times", n)
	}
	// A second member without "a" has nothing in common with the first.
	b := h.join("g", "", withProtocols(protocol("b", nil)))
	if !b.done() || b.resp.ErrorCode != errInconsistentProtocol {
		t.Fatalf("second join %+v", b.resp)
	}
}

// Generated member ids come from Config.NewMemberID (the group package draws no
// randomness of its own): clientId, "-", then its value.
func TestMemberIDFromConfig(t *testing.T) {
	cfg := testConfig()
	cfg.NewMemberID = func() string { return "from-config" }
	s := NewShard(cfg)
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version, req.Group, req.ProtocolType = 4, "g", "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 10000
	req.Protocols = []kmsg.JoinGroupRequestProtocol{protocol("range", consumerMeta("t"))}
	var got *kmsg.JoinGroupResponse
	e := s.JoinGroup(time.UnixMilli(1_700_000_000_000), Client{ID: "client", Host: "/127.0.0.1"}, req, func(r kmsg.Response) { got = r.(*kmsg.JoinGroupResponse) })
	for _, r := range e.Replies {
		r.Send(r.Response)
	}
	if got == nil || got.ErrorCode != errMemberIDRequired || got.MemberID != "client-from-config" {
		t.Fatalf("join %+v", got)
	}
}

// Strings the group metadata record cannot hold whole (int16 lengths; JoinGroup v6+ is
// flexible and can carry longer ones) are refused up front, never stored cut: a cut
// member id would not match after a reload.
func TestJoinRefusesStringsTooLongForRecords(t *testing.T) {
	long := strings.Repeat("i", 40000)
	h := newHarness(t, testConfig())
	if j := h.join("g", "", withVersion(6), withInstance(long)); !j.done() || j.resp.ErrorCode != errInvalidRequest {
		t.Fatalf("long group.instance.id: %+v", j.resp)
	}
	if j := h.join("g", "", withVersion(6), withProtocols(protocol(long, consumerMeta("t")))); !j.done() || j.resp.ErrorCode != errInvalidRequest {
		t.Fatalf("long protocol name: %+v", j.resp)
	}
	// A client id that fits but leaves no room for the generated member id's suffix.
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version, req.Group, req.ProtocolType = 6, "g", "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 10000
	req.Protocols = []kmsg.JoinGroupRequestProtocol{protocol("range", consumerMeta("t"))}
	b := &box[kmsg.JoinGroupResponse]{}
	h.run(h.s.JoinGroup(h.now, Client{ID: strings.Repeat("c", 32767), Host: "/127.0.0.1"}, req, b.send))
	if !b.done() || b.resp.ErrorCode != errInvalidRequest {
		t.Fatalf("long client id: %+v", b.resp)
	}
	if len(h.log) != 0 || len(h.s.groups) != 0 {
		t.Fatalf("refused joins left %d records, %d groups", len(h.log), len(h.s.groups))
	}
	// The longest instance id that fits joins and survives a reload.
	fits := strings.Repeat("i", maxRecordString-memberIDSuffixRoom)
	j := h.join("s", "", withVersion(6), withInstance(fits))
	h.advance(0)
	if j.resp == nil || j.resp.ErrorCode != 0 {
		t.Fatalf("longest instance id: %+v", j.resp)
	}
}
