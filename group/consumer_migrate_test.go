package group

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// classicAssignmentBytes is a ConsumerProtocolAssignment of topic's partitions.
func classicAssignmentBytes(topic string, partitions ...int32) string {
	a := kmsg.NewConsumerMemberAssignment()
	a.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: topic, Partitions: partitions}}
	return string(a.AppendTo(nil))
}

// stableClassicConsumers forms a Stable classic group "g" of two members subscribed to
// topic "a" (range), the leader assigned partitions 0-1, the other 2-3, and commits
// offset 42 of t-0; it returns the member ids (leader first) and the generation.
func stableClassicConsumers(t *testing.T, h *harness) ([]string, int32) {
	t.Helper()
	meta := withProtocols(protocol("range", consumerMeta("a")))
	j1, j2 := h.join("g", "", meta), h.join("g", "", meta)
	h.advance(0)
	if !j1.done() || !j2.done() || j1.resp.ErrorCode != 0 || j2.resp.ErrorCode != 0 {
		t.Fatalf("joins %+v %+v", j1.resp, j2.resp)
	}
	leader, gen := j1.resp.LeaderID, j1.resp.Generation
	other := j1.resp.MemberID
	if other == leader {
		other = j2.resp.MemberID
	}
	h.sync("g", other, gen, nil)
	s := h.sync("g", leader, gen, map[string]string{
		leader: classicAssignmentBytes("a", 0, 1), other: classicAssignmentBytes("a", 2, 3)})
	if !s.done() || s.resp.ErrorCode != 0 {
		t.Fatalf("sync %+v", s.resp)
	}
	if c := commitCodes(h.commit(7, "g", leader, gen, map[int32]int64{0: 42}).resp); c[0] != 0 {
		t.Fatalf("commit %v", c)
	}
	return []string{leader, other}, gen
}

// classicTombstoneFirst reports whether records begin with the classic group
// metadata tombstone of "g" and the rest are consumer group records.
func classicTombstoneFirst(records []Record) bool {
	if len(records) == 0 || string(records[0].Key) != string(groupMetadataKey("g")) || records[0].Value != nil {
		return false
	}
	for _, r := range records[1:] {
		if _, ok, err := DecodeConsumerGroupKey(r.Key); !ok || err != nil {
			return false
		}
	}
	return true
}

// A ConsumerGroupHeartbeat joining a Stable classic group of the consumer protocol
// upgrades it (group.consumer.migration.policy bidirectional): the classic members
// become consumer group members at the generation with their assignments, the
// records are the classic tombstone then the consumer group's, in one batch, the
// offsets stay, no partition is owned twice, and a load gives the same group.
func TestConsumerUpgradeClassicGroup(t *testing.T) {
	h := newHarness(t, testConfig())
	topics := cgTopics(4)
	ids, gen := stableClassicConsumers(t, h)
	before := len(h.log)
	resp := cgShardHeartbeat(h, topics, cgJoinRequest("c1", "a"))
	if resp.ErrorCode != 0 {
		t.Fatalf("join: %v %q", kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage))
	}
	written := h.log[before:]
	if len(h.batches) == 0 || !classicTombstoneFirst(written) || len(h.batches[len(h.batches)-1].records) != len(written) {
		t.Fatalf("records %d, not the classic tombstone then consumer records in one batch", len(written))
	}
	want := []string{"5:" + ids[0], "5:" + ids[1], "3:", "7:" + ids[0], "7:" + ids[1], "6:", "8:" + ids[0], "8:" + ids[1], "5:c1", "3:"}
	if got := recordKeys(t, written[1:]); strings.Join(got[:len(want)], " ") != strings.Join(want, " ") {
		t.Fatalf("records %v", got)
	}
	g := h.s.ConsumerGroup("g")
	if g == nil || g.NumMembers() != 3 || g.GroupEpoch() != gen+1 {
		t.Fatalf("group %+v", g)
	}
	if cg := h.s.groups["g"]; cg == nil || cg.isClassic() {
		t.Fatal("the classic group stayed, or its offsets went")
	}
	if !strings.Contains(fetchAll(h.s, "g"), "0:42") {
		t.Fatalf("offsets %s", fetchAll(h.s, "g"))
	}
	for i, id := range ids {
		m, ok := g.Member(id)
		if !ok || m.Classic == nil || m.Classic.SessionTimeoutMs != 10000 || m.MemberEpoch != gen || len(m.Assigned[testTopicID(1)]) != 2 ||
			m.Assigned[testTopicID(1)][0] != int32(2*i) || !slicesEqual(m.SubscribedTopicNames, []string{"a"}) {
			t.Fatalf("member %s: %+v", id, m)
		}
	}
	if err := consumerInvariants(g); err != nil {
		t.Fatal(err)
	}
	if n, _ := g.Member("c1"); len(n.Assigned) != 0 {
		t.Fatalf("the new member owns %v while the classic members have not revoked", n.Assigned)
	}
	for k := range h.timers {
		if _, gid, _ := parseTimerKey(k); gid == "g" {
			t.Fatalf("classic timer %s still set", k)
		}
	}
	loaded := replayLog(t, h.batches)
	if lg := loaded.ConsumerGroup("g"); lg == nil {
		t.Fatal("a load lost the consumer group")
	} else if err := sameConsumerGroup(g, lg); err != nil {
		t.Fatalf("a load differs: %v", err)
	}
	if !strings.Contains(fetchAll(loaded, "g"), "0:42") {
		t.Fatal("a load lost the offsets")
	}
}

func slicesEqual(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

// A classic JoinGroup parked in PreparingRebalance when the group is upgraded gets
// REBALANCE_IN_PROGRESS.
func TestConsumerUpgradeAnswersParkedJoins(t *testing.T) {
	h := newHarness(t, testConfig())
	ids, gen := stableClassicConsumers(t, h)
	parked := h.join("g", ids[0], withProtocols(protocol("range", consumerMeta("a", "b"))))
	if parked.done() {
		t.Fatalf("join not parked: %+v", parked.resp)
	}
	if resp := cgShardHeartbeat(h, cgTopics(4, 1), cgJoinRequest("c1", "a")); resp.ErrorCode != 0 {
		t.Fatalf("join: %v %q", kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage))
	}
	if !parked.done() || parked.resp.ErrorCode != kerr.RebalanceInProgress.Code {
		t.Fatalf("parked join got %+v", parked.resp)
	}
	if g := h.s.ConsumerGroup("g"); g == nil || g.GroupEpoch() != gen+1 {
		t.Fatal("not upgraded")
	}
}

// No upgrade, GROUP_ID_NOT_FOUND and nothing written: with the policy disabled or
// downgrade-only, for a protocol type other than "consumer", for more members than
// group.consumer.max.size, for malformed consumer protocol bytes; a heartbeat that
// fails on its own (an unknown member) leaves the classic group too.
func TestConsumerUpgradeRefused(t *testing.T) {
	topics := cgTopics(4)
	cases := []struct {
		name  string
		cfg   func(*Config)
		form  func(t *testing.T, h *harness)
		req   *kmsg.ConsumerGroupHeartbeatRequest
		code  int16
		msgIn string
	}{
		{name: "disabled", cfg: func(c *Config) { c.MigrationPolicy = MigrationDisabled }, code: kerr.GroupIDNotFound.Code, msgIn: "is not a consumer group."},
		{name: "downgrade only", cfg: func(c *Config) { c.MigrationPolicy = MigrationDowngrade }, code: kerr.GroupIDNotFound.Code, msgIn: "is not a consumer group."},
		{name: "max size", cfg: func(c *Config) { c.Consumer.MaxSize = 1 }, code: kerr.GroupIDNotFound.Code, msgIn: "is not a consumer group."},
		{name: "connect protocol", form: func(t *testing.T, h *harness) {
			if b := h.join("g", "", withProtocolType("connect")); !b.done() && len(h.timers) == 0 {
				t.Fatal("join")
			}
			h.advance(0)
		}, code: kerr.GroupIDNotFound.Code, msgIn: "is not a consumer group."},
		{name: "malformed", form: func(t *testing.T, h *harness) {
			h.join("g", "", withProtocols(protocol("range", []byte{0, 9})))
			h.advance(0)
		}, code: kerr.GroupIDNotFound.Code, msgIn: "embedded consumer protocol is malformed."},
		{name: "unknown member", req: func() *kmsg.ConsumerGroupHeartbeatRequest {
			r := cgJoinRequest("c1", "a")
			r.MemberEpoch = 3
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			return r
		}(), code: kerr.UnknownMemberID.Code},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig()
			if c.cfg != nil {
				c.cfg(&cfg)
			}
			h := newHarness(t, cfg)
			if c.form != nil {
				c.form(t, h)
			} else {
				stableClassicConsumers(t, h)
			}
			state := h.state("g")
			before := len(h.log)
			req := c.req
			if req == nil {
				req = cgJoinRequest("c1", "a")
			}
			resp := cgShardHeartbeat(h, topics, req)
			if resp.ErrorCode != c.code || !strings.Contains(deref(resp.ErrorMessage), c.msgIn) {
				t.Fatalf("got %v %q", kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage))
			}
			if len(h.log) != before || h.s.ConsumerGroup("g") != nil || h.state("g") != state || !h.s.groups["g"].isClassic() {
				t.Fatal("the refused heartbeat changed the shard")
			}
		})
	}
}

// An empty classic group (its members gone, offsets kept) is replaced by a consumer
// group whatever the policy, keeping the offsets.
func TestConsumerUpgradeEmptyClassicGroup(t *testing.T) {
	cfg := testConfig()
	cfg.MigrationPolicy = MigrationDisabled
	h := newHarness(t, cfg)
	ids, _ := stableClassicConsumers(t, h)
	h.leave("g", 3, ids...)
	if st := h.state("g"); st != "Empty" || !h.s.groups["g"].isClassic() {
		t.Fatalf("state %s", st)
	}
	before := len(h.log)
	if resp := cgShardHeartbeat(h, cgTopics(4), cgJoinRequest("c1", "a")); resp.ErrorCode != 0 {
		t.Fatalf("join: %v %q", kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage))
	}
	if !classicTombstoneFirst(h.log[before:]) {
		t.Fatal("no classic tombstone first")
	}
	g := h.s.ConsumerGroup("g")
	if g == nil || g.NumMembers() != 1 || g.GroupEpoch() != 1 {
		t.Fatalf("group %+v", g)
	}
	loaded := replayLog(t, h.batches)
	if loaded.ConsumerGroup("g") == nil || !strings.Contains(fetchAll(loaded, "g"), "0:42") {
		t.Fatal("a load lost the consumer group or its offsets")
	}
}

// When the upgrade's write fails, the group stays upgraded and the next write carries
// the classic tombstone again, so that a load still gives the consumer group.
func TestConsumerUpgradeWriteFails(t *testing.T) {
	h := newHarness(t, testConfig())
	topics := cgTopics(4)
	stableClassicConsumers(t, h)
	h.writeCode = kerr.NotCoordinator.Code
	if resp := cgShardHeartbeat(h, topics, cgJoinRequest("c1", "a")); resp.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("got %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	h.writeCode = 0
	if resp := cgShardHeartbeat(h, topics, cgJoinRequest("c1", "a")); resp.ErrorCode != 0 {
		t.Fatalf("rejoin: %v %q", kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage))
	}
	last := h.batches[len(h.batches)-1].records
	if !classicTombstoneFirst(last) {
		t.Fatal("the classic tombstone was not written again")
	}
	loaded := replayLog(t, h.batches)
	lg := loaded.ConsumerGroup("g")
	if lg == nil {
		t.Fatal("a load lost the consumer group")
	}
	if err := sameConsumerGroup(h.s.ConsumerGroup("g"), lg); err != nil {
		t.Fatalf("a load differs: %v", err)
	}
}

// mixedGroup is a consumer group "g" of topic "a" (4 partitions), Stable, with the
// consumer-protocol member c1 and one classic member, offset 42 of t-0 committed.
func mixedGroup(t *testing.T, cfgs ...func(*Config)) (*harness, ConsumerTopicMap, *consumerClient, *classicClient) {
	t.Helper()
	h, topics := migrationHarness(t, 4, cfgs...)
	c1 := &consumerClient{id: "c1"}
	c1.step(t, h, topics)
	k := &classicClient{mustJoin: true}
	converge(t, h, topics, []*classicClient{k}, []*consumerClient{c1})
	// The classic member commits at its generation (a commit without a member is
	// refused while the group has members).
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.MemberID, commit.Generation = 8, "g", k.id, k.gen
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 42}}}}
	var committed *kmsg.OffsetCommitResponse
	h.run(h.s.OffsetCommit(h.now, commit, kmsg.NewPtrOffsetCommitResponse(), func(r kmsg.Response) { committed = r.(*kmsg.OffsetCommitResponse) }))
	if committed == nil || committed.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("the classic member's commit: %+v", committed)
	}
	return h, topics, c1, k
}

// checkDowngraded fails unless "g" is a classic group of member k alone, rebalancing at
// generation gen, with its offsets, written as the consumer group's tombstones then
// the classic group's record in the last batch, and a load agrees.
func checkDowngraded(t *testing.T, h *harness, k *classicClient, gen int32) {
	t.Helper()
	if h.s.ConsumerGroup("g") != nil {
		t.Fatal("still a consumer group")
	}
	cg := h.s.groups["g"]
	if cg == nil || !cg.isClassic() || cg.generation != gen || len(cg.members) != 1 || cg.members[k.id] == nil ||
		cg.protocol != "cooperative-sticky" || h.state("g") != "PreparingRebalance" {
		t.Fatalf("classic group %+v, state %s", cg, h.state("g"))
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(cg.members[k.id].assignment); err != nil || len(a.Topics) != 1 || a.Topics[0].Topic != "a" {
		t.Fatalf("classic assignment %+v %v", a, err)
	}
	last := h.batches[len(h.batches)-1].records
	n := len(last)
	if n < 2 || string(last[n-1].Key) != string(groupMetadataKey("g")) || last[n-1].Value == nil {
		t.Fatal("the classic group's record is not last")
	}
	for _, r := range last[:n-1] {
		if _, ok, _ := DecodeConsumerGroupKey(r.Key); !ok || r.Value != nil {
			t.Fatal("records before the classic one are not consumer group tombstones")
		}
	}
	loaded := replayLog(t, h.batches)
	if loaded.ConsumerGroup("g") != nil || loaded.groups["g"] == nil || !loaded.groups["g"].isClassic() ||
		loaded.groups["g"].members[k.id] == nil || !strings.Contains(fetchAll(loaded, "g"), "0:42") {
		t.Fatal("a load does not give the classic group and its offsets")
	}
	// The classic member rejoins the classic group and leads the next generation.
	if code := h.heartbeat("g", k.id, k.gen); code != kerr.RebalanceInProgress.Code && code != kerr.IllegalGeneration.Code {
		t.Fatalf("classic heartbeat: %v", kerr.ErrorForCode(code))
	}
	j := h.join("g", k.id, withProtocols(protocol("cooperative-sticky", classicSubscription(k.owned))))
	h.advance(0)
	if !j.done() || j.resp.ErrorCode != 0 || j.resp.LeaderID != k.id || j.resp.Generation != gen+1 {
		t.Fatalf("rejoin: %+v", j.resp)
	}
	if s := h.sync("g", k.id, j.resp.Generation, map[string]string{k.id: classicAssignmentBytes("a", 0, 1, 2, 3)}); s.resp.ErrorCode != 0 || h.state("g") != "Stable" {
		t.Fatalf("sync %+v, state %s", s.resp, h.state("g"))
	}
}

// The last consumer-protocol member leaving a consumer group whose other members are
// classic turns it back into a classic group (policy bidirectional).
func TestConsumerDowngradeOnLeave(t *testing.T) {
	h, topics, c1, k := mixedGroup(t)
	gen := h.s.ConsumerGroup("g").GroupEpoch()
	resp := cgShardHeartbeat(h, topics, cgHBRequest("c1", LeaveMemberEpoch, nil))
	if resp.ErrorCode != 0 || resp.MemberEpoch != LeaveMemberEpoch {
		t.Fatalf("leave: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	_ = c1
	checkDowngraded(t, h, k, gen)
}

// So does its session timing out.
func TestConsumerDowngradeOnExpiry(t *testing.T) {
	h, topics, _, k := mixedGroup(t)
	gen := h.s.ConsumerGroup("g").GroupEpoch()
	for i := 0; i < 10; i++ { // the classic member heartbeats; c1 does not
		h.now = h.now.Add(5 * 1e9)
		if code := h.heartbeat("g", k.id, k.gen); code != 0 {
			t.Fatalf("heartbeat: %v", kerr.ErrorForCode(code))
		}
		if at, ok := h.s.NextConsumerDeadline(); ok && !at.After(h.now) {
			h.run(h.s.ExpireConsumerGroups(h.now, topics))
			break
		}
	}
	checkDowngraded(t, h, k, gen)
}

// With the policy upgrade or disabled the group stays a consumer group of its classic
// member.
func TestConsumerDowngradeRefused(t *testing.T) {
	for _, p := range []MigrationPolicy{MigrationUpgrade, MigrationDisabled} {
		h, topics, _, k := mixedGroup(t, func(c *Config) { c.MigrationPolicy = p })
		if resp := cgShardHeartbeat(h, topics, cgHBRequest("c1", LeaveMemberEpoch, nil)); resp.ErrorCode != 0 {
			t.Fatalf("%v leave: %v", p, kerr.ErrorForCode(resp.ErrorCode))
		}
		g := h.s.ConsumerGroup("g")
		if g == nil || g.NumMembers() != 1 || h.s.groups["g"].isClassic() {
			t.Fatalf("%v: downgraded", p)
		}
		if _, ok := g.Member(k.id); !ok {
			t.Fatalf("%v: the classic member went", p)
		}
	}
}

// When the downgrade's write fails, the consumer group's tombstones go first in the
// group's next write, before the classic group's record: a load gives the classic group.
func TestConsumerDowngradeWriteFails(t *testing.T) {
	h, topics, _, k := mixedGroup(t)
	gen := h.s.ConsumerGroup("g").GroupEpoch()
	h.writeCode = kerr.NotEnoughReplicas.Code
	cgShardHeartbeat(h, topics, cgHBRequest("c1", LeaveMemberEpoch, nil))
	h.writeCode = 0
	if h.s.ConsumerGroup("g") != nil || !h.s.groups["g"].isClassic() {
		t.Fatal("not downgraded")
	}
	j := h.join("g", k.id, withProtocols(protocol("cooperative-sticky", classicSubscription(k.owned))))
	h.advance(0)
	if !j.done() || j.resp.ErrorCode != 0 || j.resp.Generation != gen+1 {
		t.Fatalf("rejoin: %+v", j.resp)
	}
	h.sync("g", k.id, j.resp.Generation, map[string]string{k.id: classicAssignmentBytes("a", 0, 1, 2, 3)})
	loaded := replayLog(t, h.batches)
	if loaded.ConsumerGroup("g") != nil || loaded.groups["g"] == nil || loaded.groups["g"].generation != gen+1 {
		t.Fatal("a load does not give the classic group")
	}
}

// A classic JoinGroup naming an empty consumer group deletes it (whatever the policy)
// and forms a classic group keeping the offsets.
func TestClassicJoinOfEmptyConsumerGroup(t *testing.T) {
	h, topics := migrationHarness(t, 4, func(c *Config) { c.MigrationPolicy = MigrationDisabled })
	c1 := &consumerClient{id: "c1"}
	c1.step(t, h, topics)
	cgShardHeartbeat(h, topics, cgHBRequest("c1", LeaveMemberEpoch, nil))
	if g := h.s.ConsumerGroup("g"); g == nil || g.NumMembers() != 0 {
		t.Fatal("no empty consumer group")
	}
	j := h.join("g", "", withProtocols(protocol("range", consumerMeta("a"))))
	h.advance(0)
	if !j.done() || j.resp.ErrorCode != 0 || h.s.ConsumerGroup("g") != nil || !h.s.groups["g"].isClassic() {
		t.Fatalf("join: %+v", j.resp)
	}
	loaded := replayLog(t, h.batches)
	if loaded.ConsumerGroup("g") != nil {
		t.Fatal("a load gives the consumer group back")
	}
}
