package group

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// migrationHarness is a shard whose consumer groups see topics (one topic "a" of
// partitions partitions) from classic members' requests too.
func migrationHarness(t *testing.T, partitions int32, cfgs ...func(*Config)) (*harness, ConsumerTopicMap) {
	topics := cgTopics(partitions)
	cfg := testConfig()
	cfg.ConsumerTopics = func() ConsumerTopics { return topics }
	for _, f := range cfgs {
		f(&cfg)
	}
	return newHarness(t, cfg), topics
}

// classicClient plays a cooperative classic consumer of topic "a": it rejoins when a
// heartbeat says so, reporting what it owns, and owns what SyncGroup gives it
// (revoking the rest first, as the cooperative protocol does).
type classicClient struct {
	protocol string // "" cooperative-sticky
	id       string
	gen      int32
	owned    []int32
	mustJoin bool
}

func classicSubscription(owned []int32) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Version = 1
	m.Topics = []string{"a"}
	if len(owned) > 0 {
		m.OwnedPartitions = []kmsg.ConsumerMemberMetadataOwnedPartition{{Topic: "a", Partitions: slices.Clone(owned)}}
	}
	return m.AppendTo(nil)
}

// joinAndSync rejoins and syncs; it returns the JoinGroup error code.
func (c *classicClient) joinAndSync(t *testing.T, h *harness) int16 {
	t.Helper()
	name := c.protocol
	if name == "" {
		name = "cooperative-sticky"
	}
	j := h.join("g", c.id, withProtocols(protocol(name, classicSubscription(c.owned))))
	if !j.done() {
		t.Fatal("JoinGroup of a consumer group parked")
	}
	if j.resp.ErrorCode != 0 {
		return j.resp.ErrorCode
	}
	c.id, c.gen, c.mustJoin = j.resp.MemberID, j.resp.Generation, false
	if j.resp.LeaderID != "" || len(j.resp.Members) != 0 || deref(j.resp.Protocol) != name {
		t.Fatalf("join response %+v", j.resp)
	}
	s := h.sync("g", c.id, c.gen, nil)
	if !s.done() || s.resp.ErrorCode != 0 {
		t.Fatalf("sync: %+v", s.resp)
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(s.resp.MemberAssignment); err != nil {
		t.Fatalf("assignment: %v", err)
	}
	var got []int32
	for _, tp := range a.Topics {
		if tp.Topic != "a" {
			t.Fatalf("assigned topic %q", tp.Topic)
		}
		got = append(got, tp.Partitions...)
	}
	slices.Sort(got)
	if slices.ContainsFunc(c.owned, func(p int32) bool { return !slices.Contains(got, p) }) {
		c.mustJoin = true // revoked some: rejoin (cooperative)
	}
	c.owned = got
	return 0
}

func (c *classicClient) step(t *testing.T, h *harness) {
	t.Helper()
	if c.mustJoin {
		if code := c.joinAndSync(t, h); code != 0 {
			t.Fatalf("join %s: %v", c.id, kerr.ErrorForCode(code))
		}
		return
	}
	switch code := h.heartbeat("g", c.id, c.gen); code {
	case 0:
	case kerr.RebalanceInProgress.Code:
		c.mustJoin = true
	default:
		t.Fatalf("heartbeat %s: %v", c.id, kerr.ErrorForCode(code))
	}
}

// consumerClient plays a consumer-protocol member of topic "a".
type consumerClient struct {
	id    string
	epoch int32
	owned []int32
}

func (c *consumerClient) step(t *testing.T, h *harness, topics ConsumerTopicMap) {
	t.Helper()
	var resp *kmsg.ConsumerGroupHeartbeatResponse
	if c.epoch == 0 {
		resp = cgShardHeartbeat(h, topics, cgJoinRequest(c.id, "a"))
	} else {
		resp = cgShardHeartbeat(h, topics, cgHBRequest(c.id, c.epoch, AssignedPartitions{topics["a"].ID: c.owned}))
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("heartbeat %s: %v %q", c.id, kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage))
	}
	c.epoch = resp.MemberEpoch
	if a := respAssignment(resp); a != nil {
		c.owned = slices.Clone(a[topics["a"].ID])
	}
}

// converge steps every client until the group is Stable, checking after each step
// that no partition is owned by two clients; it returns each client's partitions.
func converge(t *testing.T, h *harness, topics ConsumerTopicMap, classics []*classicClient, consumers []*consumerClient) [][]int32 {
	t.Helper()
	owned := func() [][]int32 {
		var out [][]int32
		for _, c := range classics {
			out = append(out, c.owned)
		}
		for _, c := range consumers {
			out = append(out, c.owned)
		}
		return out
	}
	check := func() {
		seen := map[int32]bool{}
		for _, ps := range owned() {
			for _, p := range ps {
				if seen[p] {
					t.Fatalf("partition %d owned twice: %v", p, owned())
				}
				seen[p] = true
			}
		}
		if err := consumerInvariants(h.s.ConsumerGroup("g")); err != nil {
			t.Fatal(err)
		}
	}
	for round := 0; round < 20; round++ {
		for _, c := range classics {
			c.step(t, h)
			check()
		}
		for _, c := range consumers {
			c.step(t, h, topics)
			check()
		}
		stable := h.s.ConsumerGroup("g").State() == ConsumerGroupStable
		for _, c := range classics {
			stable = stable && !c.mustJoin
		}
		if stable {
			return owned()
		}
	}
	t.Fatalf("not Stable after 20 rounds: %v", owned())
	return nil
}

// balanced fails unless every partition of n is owned once and the counts differ by
// at most one.
func balanced(t *testing.T, owned [][]int32, n int32) {
	t.Helper()
	total, lo, hi := 0, int(n), 0
	for _, ps := range owned {
		total += len(ps)
		lo, hi = min(lo, len(ps)), max(hi, len(ps))
	}
	if total != int(n) || hi-lo > 1 {
		t.Fatalf("assignment %v", owned)
	}
}

// A classic consumer joins a consumer group: it gets a member id, the member epoch
// as its generation, and, through SyncGroup and REBALANCE_IN_PROGRESS heartbeats, its
// share of the partitions once the consumer member released them; no partition is
// owned twice on the way; a load gives the same group, the classic member included.
func TestClassicMemberJoinsConsumerGroup(t *testing.T) {
	h, topics := migrationHarness(t, 4)
	c1 := &consumerClient{id: "c1"}
	c1.step(t, h, topics)
	k := &classicClient{mustJoin: true}
	owned := converge(t, h, topics, []*classicClient{k}, []*consumerClient{c1})
	balanced(t, owned, 4)
	g := h.s.ConsumerGroup("g")
	m, ok := g.Member(k.id)
	if !ok || m.Classic == nil || m.Classic.SessionTimeoutMs != 10000 || m.Classic.SupportedProtocols[0].Name != "cooperative-sticky" {
		t.Fatalf("classic member %+v", m)
	}
	if k.gen != g.GroupEpoch() {
		t.Fatalf("generation %d, group epoch %d", k.gen, g.GroupEpoch())
	}
	if d := h.s.ConsumerGroupDescribe("g", func([16]byte) (string, bool) { return "a", true }); d.Members[0].MemberType+d.Members[1].MemberType != 1 {
		t.Fatalf("member types %d %d", d.Members[0].MemberType, d.Members[1].MemberType)
	}
	loaded := replayLog(t, h.batches)
	if err := sameConsumerGroup(g, loaded.ConsumerGroup("g")); err != nil {
		t.Fatalf("a load differs: %v", err)
	}
	if lm, _ := loaded.ConsumerGroup("g").Member(k.id); lm.Classic == nil {
		t.Fatal("a load lost the classic metadata")
	}
}

// The whole upgrade: two classic members of a Stable classic group keep consuming
// while a consumer-protocol member joins; the classic members are told to rejoin, and
// the three converge to a balanced assignment with no partition owned twice.
func TestClassicGroupUpgradeConverges(t *testing.T) {
	h, topics := migrationHarness(t, 6)
	ids, gen := stableClassicConsumers(t, h) // 0-1 and 2-3
	classics := []*classicClient{{protocol: "range", id: ids[0], gen: gen, owned: []int32{0, 1}},
		{protocol: "range", id: ids[1], gen: gen, owned: []int32{2, 3}}}
	c1 := &consumerClient{id: "c1"}
	c1.step(t, h, topics)
	if h.s.ConsumerGroup("g") == nil {
		t.Fatal("not upgraded")
	}
	if code := h.heartbeat("g", ids[0], gen); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("classic heartbeat after the upgrade: %v", kerr.ErrorForCode(code))
	}
	classics[0].mustJoin = true
	balanced(t, converge(t, h, topics, classics, []*consumerClient{c1}), 6)
	loaded := replayLog(t, h.batches)
	if err := sameConsumerGroup(h.s.ConsumerGroup("g"), loaded.ConsumerGroup("g")); err != nil {
		t.Fatalf("a load differs: %v", err)
	}
}

// Classic requests a consumer group refuses: another protocol type, no metadata image
// (Config.ConsumerTopics unset), a v4 join without member id (MEMBER_ID_REQUIRED, then
// the join with the id works), unknown members and generations in SyncGroup and
// Heartbeat, a consumer-protocol member's id in classic requests.
func TestClassicRequestsToConsumerGroupRefused(t *testing.T) {
	h, topics := migrationHarness(t, 2)
	(&consumerClient{id: "c1"}).step(t, h, topics)
	meta := withProtocols(protocol("range", classicSubscription(nil)))
	if j := h.join("g", "", meta, withProtocolType("connect")); j.resp.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("connect join: %v", kerr.ErrorForCode(j.resp.ErrorCode))
	}
	j := h.join("g", "", meta, withVersion(4))
	if j.resp.ErrorCode != kerr.MemberIDRequired.Code || j.resp.MemberID == "" {
		t.Fatalf("v4 join: %+v", j.resp)
	}
	if j2 := h.join("g", j.resp.MemberID, meta, withVersion(4)); j2.resp.ErrorCode != 0 || j2.resp.MemberID != j.resp.MemberID {
		t.Fatalf("v4 rejoin: %+v", j2.resp)
	}
	if j := h.join("g", "c1", meta); j.resp.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("join as a consumer member: %v", kerr.ErrorForCode(j.resp.ErrorCode))
	}
	if code := h.heartbeat("g", "nope", 1); code != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat unknown: %v", kerr.ErrorForCode(code))
	}
	if code := h.heartbeat("g", "c1", 1); code != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat of a consumer member: %v", kerr.ErrorForCode(code))
	}
	if code := h.heartbeat("g", j.resp.MemberID, 99); code != kerr.IllegalGeneration.Code {
		t.Fatalf("heartbeat generation 99: %v", kerr.ErrorForCode(code))
	}
	if s := h.sync("g", j.resp.MemberID, 99, nil); s.resp.ErrorCode != kerr.IllegalGeneration.Code {
		t.Fatalf("sync generation 99: %v", kerr.ErrorForCode(s.resp.ErrorCode))
	}
	noImage, topics2 := migrationHarness(t, 2, func(c *Config) { c.ConsumerTopics = nil })
	(&consumerClient{id: "c1"}).step(t, noImage, topics2)
	if j := noImage.join("g", "", meta); j.resp.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("join without an image: %v", kerr.ErrorForCode(j.resp.ErrorCode))
	}
}

// A classic member of a consumer group leaves with LeaveGroup (v0 and v3, the latter
// by instance id too), bumping the group epoch; its session timeout is its own.
func TestClassicMemberLeavesConsumerGroup(t *testing.T) {
	h, topics := migrationHarness(t, 4)
	c1 := &consumerClient{id: "c1"}
	c1.step(t, h, topics)
	a, b := &classicClient{mustJoin: true}, &classicClient{mustJoin: true}
	converge(t, h, topics, []*classicClient{a, b}, []*consumerClient{c1})
	g := h.s.ConsumerGroup("g")
	epoch := g.GroupEpoch()
	if r := h.leave("g", 0, a.id); r.ErrorCode != 0 {
		t.Fatalf("leave v0: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if _, ok := g.Member(a.id); ok || g.GroupEpoch() != epoch+1 {
		t.Fatalf("member stayed, or epoch %d", g.GroupEpoch())
	}
	if r := h.leave("g", 3, "nope", "c1"); r.Members[0].ErrorCode != kerr.UnknownMemberID.Code || r.Members[1].ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("leave of unknown and consumer members: %+v", r.Members)
	}
	// b's session (10 s, its JoinGroup's) passes while c1 keeps heartbeating.
	h.now = h.now.Add(6 * 1e9)
	c1.step(t, h, topics)
	h.now = h.now.Add(5 * 1e9)
	c1.step(t, h, topics)
	h.run(h.s.ExpireConsumerGroups(h.now, topics))
	if _, ok := g.Member(b.id); ok {
		t.Fatal("the classic member outlived its session timeout")
	}
	if _, ok := g.Member("c1"); !ok {
		t.Fatal("c1 expired")
	}
	loaded := replayLog(t, h.batches)
	if err := sameConsumerGroup(g, loaded.ConsumerGroup("g")); err != nil {
		t.Fatal(fmt.Sprint("a load differs: ", err))
	}
}

// A classic member's offset commit to a consumer group is checked against its member
// epoch as its generation (classicOffsetCommitCode).
func TestClassicMemberOffsetCommitCode(t *testing.T) {
	h, _, c1, k := mixedGroup(t)
	g := h.s.ConsumerGroup("g")
	for _, c := range []struct {
		member  string
		gen     int32
		handled bool
		code    int16
	}{{k.id, k.gen, true, 0}, {k.id, k.gen - 1, true, kerr.IllegalGeneration.Code}, {"c1", c1.epoch, false, 0}, {"nope", 1, false, 0}} {
		if handled, code := g.classicOffsetCommitCode(c.member, nil, c.gen); handled != c.handled || code != c.code {
			t.Fatalf("%s gen %d: %v %v", c.member, c.gen, handled, kerr.ErrorForCode(code))
		}
	}
	if _, code := g.classicOffsetCommitCode(k.id, kmsg.StringPtr("other"), k.gen); code != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown instance: %v", kerr.ErrorForCode(code))
	}
}

// A static classic member restarted with a new member id takes its instance's place
// in the consumer group, with its partitions; the old member id is fenced.
func TestClassicStaticMemberReplaced(t *testing.T) {
	h, topics := migrationHarness(t, 4)
	c1 := &consumerClient{id: "c1"}
	c1.step(t, h, topics)
	j := h.join("g", "", withInstance("i1"), withVersion(4), withProtocols(protocol("range", classicSubscription(nil))))
	if !j.done() || j.resp.ErrorCode != 0 {
		t.Fatalf("static join: %+v", j.resp)
	}
	k := &classicClient{protocol: "range", id: j.resp.MemberID, gen: j.resp.Generation, mustJoin: true}
	converge(t, h, topics, []*classicClient{k}, []*consumerClient{c1})
	g := h.s.ConsumerGroup("g")
	before, _ := g.Member(k.id)
	j2 := h.join("g", "", withInstance("i1"), withVersion(4), withProtocols(protocol("range", classicSubscription(nil))))
	if !j2.done() || j2.resp.ErrorCode != 0 || j2.resp.MemberID == k.id {
		t.Fatalf("restarted static join: %+v", j2.resp)
	}
	if _, ok := g.Member(k.id); ok {
		t.Fatal("the old member id stayed")
	}
	if id, _ := g.StaticMemberID("i1"); id != j2.resp.MemberID {
		t.Fatalf("instance i1 is %s", id)
	}
	after, _ := g.Member(j2.resp.MemberID)
	if !assignmentsEqual(after.Target, before.Target) {
		t.Fatalf("target %v, was %v", after.Target, before.Target)
	}
	if code := h.heartbeat("g", k.id, k.gen); code != kerr.UnknownMemberID.Code && code != kerr.FencedInstanceID.Code {
		t.Fatalf("old member's heartbeat: %v", kerr.ErrorForCode(code))
	}
	if err := consumerInvariants(g); err != nil {
		t.Fatal(err)
	}
	loaded := replayLog(t, h.batches)
	if err := sameConsumerGroup(g, loaded.ConsumerGroup("g")); err != nil {
		t.Fatalf("a load differs: %v", err)
	}
}

// A classic member told to rejoin that keeps heartbeating without rejoining is removed
// once its rebalance timeout (20 s) passed, while c1 stays.
func TestClassicMemberRejoinTimeout(t *testing.T) {
	h, topics, c1, k := mixedGroup(t)
	(&consumerClient{id: "c2"}).step(t, h, topics) // the group epoch moves
	g := h.s.ConsumerGroup("g")
	for i := 0; i < 6; i++ {
		code := h.heartbeat("g", k.id, k.gen)
		if i < 4 && code != kerr.RebalanceInProgress.Code || i >= 4 && code != kerr.UnknownMemberID.Code {
			t.Fatalf("heartbeat after %d s: %v", 5*i, kerr.ErrorForCode(code))
		}
		h.now = h.now.Add(5 * 1e9)
		c1.step(t, h, topics)
		if at, ok := h.s.NextConsumerDeadline(); ok && !at.After(h.now) {
			h.run(h.s.ExpireConsumerGroups(h.now, topics))
		}
	}
	if _, ok := g.Member(k.id); ok {
		t.Fatal("the classic member that never rejoined stayed")
	}
	if _, ok := g.Member("c1"); !ok {
		t.Fatal("c1 went")
	}
}
