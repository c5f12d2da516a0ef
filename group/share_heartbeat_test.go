package group

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A member joins with its own id; the group asks for the share state of the
// subscribed partitions, and once it is initialized the member's next heartbeat gets
// them at a new epoch.
func TestShareGroupJoinInitializesThenAssigns(t *testing.T) {
	h := newSG(t, cgTopics(2))
	resp := h.ok(sgReq("s", "m1", 0, "a"))
	if deref(resp.MemberID) != "m1" || resp.MemberEpoch != 1 || resp.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("join response %+v", resp)
	}
	if a := shareAssigned(resp); a == nil || len(a) != 0 {
		t.Fatalf("join assignment %v, want empty (no share state yet)", a)
	}
	if len(h.inits) != 1 || h.inits[0].GroupEpoch != 1 || len(h.inits[0].Topics) != 1 ||
		h.inits[0].Topics[0].TopicName != "a" || len(h.inits[0].Topics[0].Partitions) != 2 {
		t.Fatalf("initializations asked: %+v", h.inits)
	}
	h.initialize(0)
	g := h.s.ShareGroup("s")
	if g.GroupEpoch() != 2 {
		t.Fatalf("group epoch %d after initialization, want 2", g.GroupEpoch())
	}
	resp = h.ok(sgReq("s", "m1", 1))
	if resp.MemberEpoch != 2 || !assignmentsEqual(shareAssigned(resp), AssignedPartitions{testTopicID(1): {0, 1}}) {
		t.Fatalf("heartbeat after initialization: epoch %d assignment %v", resp.MemberEpoch, shareAssigned(resp))
	}
	// Nothing changed: no assignment in the response, no record.
	logged := len(h.log)
	resp = h.ok(sgReq("s", "m1", 2))
	if resp.Assignment != nil || len(h.log) != logged {
		t.Fatalf("idle heartbeat sent %v and wrote %d records", resp.Assignment, len(h.log)-logged)
	}
	if g.State() != ShareGroupStable {
		t.Fatalf("state %v", g.State())
	}
}

// joinInitialized joins members to group s (subscribed to topics) and brings every
// one to the assignment over initialized share state.
func (h *sgHarness) joinInitialized(members []string, topics ...string) map[string]AssignedPartitions {
	h.t.Helper()
	epochs := map[string]int32{}
	for _, m := range members {
		epochs[m] = h.ok(sgReq("s", m, 0, topics...)).MemberEpoch
	}
	h.initialize(0)
	out := map[string]AssignedPartitions{}
	for range 2 {
		for _, m := range members {
			resp := h.ok(sgReq("s", m, epochs[m]))
			epochs[m] = resp.MemberEpoch
			if a := shareAssigned(resp); a != nil {
				out[m] = a
			}
		}
	}
	return out
}

// Share groups assign a partition to several members when members outnumber
// partitions, with no revocation step: every member of three gets the one partition.
func TestShareGroupSharesPartitions(t *testing.T) {
	h := newSG(t, cgTopics(1))
	got := h.joinInitialized([]string{"m1", "m2", "m3"}, "a")
	for _, m := range []string{"m1", "m2", "m3"} {
		if !assignmentsEqual(got[m], AssignedPartitions{testTopicID(1): {0}}) {
			t.Fatalf("member %s assigned %v, want a-0", m, got[m])
		}
	}
	// Four members, two partitions: each partition to two members, one partition each.
	h = newSG(t, cgTopics(2))
	got = h.joinInitialized([]string{"m1", "m2", "m3", "m4"}, "a")
	holders := map[int32]int{}
	for _, a := range got {
		if countPartitions(a) != 1 {
			t.Fatalf("assignments %v: a member does not hold exactly one partition", got)
		}
		holders[a[testTopicID(1)][0]]++
	}
	if holders[0] != 2 || holders[1] != 2 {
		t.Fatalf("assignments %v: partitions not shared two by two", got)
	}
}

func TestShareGroupLeave(t *testing.T) {
	h := newSG(t, cgTopics(2))
	h.joinInitialized([]string{"m1", "m2"}, "a")
	g := h.s.ShareGroup("s")
	epoch := g.GroupEpoch()
	resp := h.ok(sgReq("s", "m1", LeaveMemberEpoch))
	if deref(resp.MemberID) != "m1" || resp.MemberEpoch != LeaveMemberEpoch {
		t.Fatalf("leave response %+v", resp)
	}
	if g.NumMembers() != 1 || g.GroupEpoch() != epoch+1 {
		t.Fatalf("after leave: %d members, epoch %d (was %d)", g.NumMembers(), g.GroupEpoch(), epoch)
	}
	// The remaining member takes every partition at its next heartbeat.
	m2, _ := g.Member("m2")
	resp = h.ok(sgReq("s", "m2", m2.MemberEpoch))
	if !assignmentsEqual(shareAssigned(resp), AssignedPartitions{testTopicID(1): {0, 1}}) {
		t.Fatalf("m2 after m1 left: %v", shareAssigned(resp))
	}
	resp = h.hb(sgReq("s", "m1", LeaveMemberEpoch))
	if resp.ErrorCode != kerr.UnknownMemberID.Code || deref(resp.ErrorMessage) != "Member m1 is not a member of group s." {
		t.Fatalf("second leave: %d %q", resp.ErrorCode, deref(resp.ErrorMessage))
	}
}

func TestShareGroupEpochFencing(t *testing.T) {
	h := newSG(t, cgTopics(2))
	h.joinInitialized([]string{"m1"}, "a")
	m, _ := h.s.ShareGroup("s").Member("m1")
	if m.MemberEpoch != 2 || m.PreviousMemberEpoch != 1 {
		t.Fatalf("member epochs %d/%d", m.MemberEpoch, m.PreviousMemberEpoch)
	}
	resp := h.hb(sgReq("s", "m1", 3))
	if resp.ErrorCode != kerr.FencedMemberEpoch.Code || deref(resp.ErrorMessage) != "The share group member has a greater member epoch (3) "+
		"than the one known by the group coordinator (2). The member must abandon all its partitions and rejoin." {
		t.Fatalf("greater epoch: %d %q", resp.ErrorCode, deref(resp.ErrorMessage))
	}
	// The previous epoch is accepted: the response that moved the member may be lost.
	if resp := h.ok(sgReq("s", "m1", 1)); resp.MemberEpoch != 2 {
		t.Fatalf("previous epoch answered epoch %d", resp.MemberEpoch)
	}
	// Epoch 0 from a known member is a rejoin: it gets its current state back.
	if resp := h.ok(sgReq("s", "m1", 0, "a")); resp.MemberEpoch != 2 || shareAssigned(resp) == nil {
		t.Fatalf("rejoin with epoch 0: %+v", resp)
	}
	// A smaller epoch that is not the previous one is fenced (the state set up
	// directly).
	h.s.ShareGroup("s").members["m1"].previousEpoch = 0
	resp = h.hb(sgReq("s", "m1", 1))
	if resp.ErrorCode != kerr.FencedMemberEpoch.Code || deref(resp.ErrorMessage) != "The share group member has a smaller member epoch (1) "+
		"than the one known by the group coordinator (2), and it does not match the previous member epoch (0). "+
		"The member must abandon all its partitions and rejoin." {
		t.Fatalf("smaller epoch: %d %q", resp.ErrorCode, deref(resp.ErrorMessage))
	}
	resp = h.hb(sgReq("s", "stranger", 5))
	if resp.ErrorCode != kerr.UnknownMemberID.Code || deref(resp.ErrorMessage) != "Member stranger is not a member of group s." {
		t.Fatalf("unknown member: %d %q", resp.ErrorCode, deref(resp.ErrorMessage))
	}
}

func TestShareGroupHeartbeatValidation(t *testing.T) {
	h := newSG(t, cgTopics(1))
	rack := func(r *kmsg.ShareGroupHeartbeatRequest) { r.RackID = kmsg.StringPtr(" ") }
	for _, c := range []struct {
		req  *kmsg.ShareGroupHeartbeatRequest
		edit func(*kmsg.ShareGroupHeartbeatRequest)
		msg  string
	}{
		{sgReq("s", "", 0, "a"), nil, "MemberId can't be empty."},
		{sgReq("", "m", 0, "a"), nil, "GroupId can't be empty."},
		{sgReq("s", "m", 0, "a"), rack, "RackId can't be empty."},
		{sgReq("s", "m", 0), nil, "SubscribedTopicNames must be set in first request."},
		{sgReq("s", "m", -2), nil, "MemberEpoch is invalid."},
	} {
		if c.edit != nil {
			c.edit(c.req)
		}
		resp := h.hb(c.req)
		if resp.ErrorCode != kerr.InvalidRequest.Code || deref(resp.ErrorMessage) != c.msg {
			t.Errorf("%+v: %d %q, want INVALID_REQUEST %q", c.req, resp.ErrorCode, deref(resp.ErrorMessage), c.msg)
		}
	}
	long := sgReq("s", "m", 0, string(make([]byte, 40000)))
	if resp := h.hb(long); resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("a topic name no record holds: %d", resp.ErrorCode)
	}
	if len(h.log) != 0 || h.s.ShareGroup("s") != nil {
		t.Fatal("an invalid heartbeat changed the shard")
	}
}

func TestShareGroupMaxSize(t *testing.T) {
	h := newSG(t, cgTopics(1), func(c *Config) { c.Share.MaxSize = 2 })
	h.ok(sgReq("s", "m1", 0, "a"))
	h.ok(sgReq("s", "m2", 0, "a"))
	resp := h.hb(sgReq("s", "m3", 0, "a"))
	if resp.ErrorCode != kerr.GroupMaxSizeReached.Code || deref(resp.ErrorMessage) != "The share group has reached its maximum capacity of 2 members." {
		t.Fatalf("third member: %d %q", resp.ErrorCode, deref(resp.ErrorMessage))
	}
	h.ok(sgReq("s", "m2", 0, "a")) // a member already in may rejoin
}

// One group id is one type: share, consumer and classic requests refuse each other's
// groups with Kafka's errors.
func TestShareGroupIDTypeConflicts(t *testing.T) {
	h := newSG(t, cgTopics(1))
	h.join("classic", "")
	h.advance(0)
	resp := h.hb(sgReq("classic", "m", 0, "a"))
	if resp.ErrorCode != kerr.GroupIDNotFound.Code || deref(resp.ErrorMessage) != "Group classic is not a share group." {
		t.Fatalf("share heartbeat on a classic group: %d %q", resp.ErrorCode, deref(resp.ErrorMessage))
	}
	cg := cgJoinRequest("m", "a")
	cg.Group = "consumer"
	h.run(h.s.ConsumerGroupHeartbeat(h.now, Client{}, cg, h.topics, func(kmsg.Response) {}))
	if resp := h.hb(sgReq("consumer", "m", 0, "a")); resp.ErrorCode != kerr.GroupIDNotFound.Code ||
		deref(resp.ErrorMessage) != "Group consumer is not a share group." {
		t.Fatalf("share heartbeat on a consumer group: %d %q", resp.ErrorCode, deref(resp.ErrorMessage))
	}
	if d := h.s.ShareGroupDescribe("consumer", nil); d.ErrorCode != kerr.GroupIDNotFound.Code || deref(d.ErrorMessage) != "Group consumer is not a share group." {
		t.Fatalf("ShareGroupDescribe of a consumer group: %+v", d)
	}
	h.ok(sgReq("s", "m", 0, "a"))
	cg = cgJoinRequest("m", "a")
	cg.Group = "s"
	var cresp *kmsg.ConsumerGroupHeartbeatResponse
	h.run(h.s.ConsumerGroupHeartbeat(h.now, Client{}, cg, h.topics, func(r kmsg.Response) { cresp = r.(*kmsg.ConsumerGroupHeartbeatResponse) }))
	if cresp.ErrorCode != kerr.GroupIDNotFound.Code || deref(cresp.ErrorMessage) != "Group s is not a consumer group." {
		t.Fatalf("consumer heartbeat on a share group: %d %q", cresp.ErrorCode, deref(cresp.ErrorMessage))
	}
	if d := h.s.ConsumerGroupDescribe("s", nil); deref(d.ErrorMessage) != "Group s is not a consumer group." {
		t.Fatalf("ConsumerGroupDescribe of a share group: %+v", d)
	}
	if j := h.join("s", ""); j.resp == nil || j.resp.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("JoinGroup of a share group: %+v", j.resp)
	}
	if d := h.s.DescribeGroup("s", 6, false); d.ErrorCode != kerr.GroupIDNotFound.Code || d.State != "Dead" {
		t.Fatalf("DescribeGroups of a share group: %+v", d)
	}
	commit := h.commit(9, "s", "", -1, map[int32]int64{0: 1})
	if code := commitCodes(commit.resp)[0]; code != kerr.GroupIDNotFound.Code {
		t.Fatalf("OffsetCommit to a share group: %d", code)
	}
}

func TestShareGroupSessionExpiry(t *testing.T) {
	h := newSG(t, cgTopics(1))
	h.ok(sgReq("s", "m1", 0, "a"))
	start := h.now
	at, ok := h.s.NextConsumerDeadline()
	if !ok || !at.Equal(start.Add(45*time.Second)) || !h.timers[ConsumerDeadlineTimer].Equal(at) {
		t.Fatalf("deadline %v %v, timer %v", at, ok, h.timers[ConsumerDeadlineTimer])
	}
	h.now = start.Add(44 * time.Second)
	h.run(h.s.ExpireConsumerGroups(h.now, h.topics))
	if h.s.ShareGroup("s").NumMembers() != 1 {
		t.Fatal("expired before the session timeout")
	}
	h.now = start.Add(45 * time.Second)
	h.run(h.s.ExpireConsumerGroups(h.now, h.topics))
	g := h.s.ShareGroup("s")
	if g.NumMembers() != 0 || g.State() != ShareGroupEmpty {
		t.Fatalf("after the session timeout: %d members, %v", g.NumMembers(), g.State())
	}
	if _, ok := h.s.NextConsumerDeadline(); ok {
		t.Fatal("a deadline remains")
	}
}

// The group's own share.session.timeout.ms and share.heartbeat.interval.ms apply.
func TestShareGroupOwnConfig(t *testing.T) {
	h := newSG(t, cgTopics(1), func(c *Config) {
		c.ShareGroupConfig = func(string) ConsumerGroupConfig {
			return ConsumerGroupConfig{SessionTimeout: 50 * time.Second, HeartbeatInterval: 7 * time.Second}
		}
	})
	resp := h.ok(sgReq("s", "m1", 0, "a"))
	at, _ := h.s.NextConsumerDeadline()
	if resp.HeartbeatIntervalMillis != 7000 || !at.Equal(h.now.Add(50*time.Second)) {
		t.Fatalf("interval %d, deadline in %v", resp.HeartbeatIntervalMillis, at.Sub(h.now))
	}
}

func TestShareConfigValidate(t *testing.T) {
	if err := DefaultShareConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []ShareConfig{
		{SessionTimeout: 44 * time.Second, HeartbeatInterval: 5 * time.Second, MaxSize: 200},
		{SessionTimeout: 61 * time.Second, HeartbeatInterval: 5 * time.Second, MaxSize: 200},
		{SessionTimeout: 45 * time.Second, HeartbeatInterval: 4 * time.Second, MaxSize: 200},
		{SessionTimeout: 45 * time.Second, HeartbeatInterval: 16 * time.Second, MaxSize: 200},
		{SessionTimeout: 45 * time.Second, HeartbeatInterval: 5 * time.Second, MaxSize: 1001},
		{SessionTimeout: 45 * time.Second, HeartbeatInterval: 5 * time.Second, MaxSize: 0},
	} {
		if err := c.Validate(); !errors.Is(err, ErrInvalidShareConfig) {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

func TestShareGroupListDescribeDelete(t *testing.T) {
	h := newSG(t, cgTopics(2))
	h.joinInitialized([]string{"m1", "m2"}, "a")
	lg := h.s.ListGroups(nil, []string{"Share"})
	if len(lg) != 1 || lg[0].Group != "s" || lg[0].GroupType != "share" || lg[0].ProtocolType != "share" || lg[0].GroupState != "Stable" {
		t.Fatalf("ListGroups(type share): %+v", lg)
	}
	if lg := h.s.ListGroups(nil, []string{"consumer"}); len(lg) != 0 {
		t.Fatalf("ListGroups(type consumer): %+v", lg)
	}
	names := func(id [16]byte) (string, bool) { return "a", id == testTopicID(1) }
	d := h.s.ShareGroupDescribe("s", names)
	if d.ErrorCode != 0 || d.GroupState != "Stable" || d.Assignor != "simple" || d.GroupEpoch != 3 || d.AssignmentEpoch != 3 || len(d.Members) != 2 {
		t.Fatalf("describe %+v", d)
	}
	m := d.Members[0]
	if m.MemberID != "m1" || m.MemberEpoch != 3 || m.ClientID != "client" || m.ClientHost != "/127.0.0.1" ||
		len(m.SubscribedTopicNames) != 1 || len(m.Assignment.TopicPartitions) != 1 || m.Assignment.TopicPartitions[0].Topic != "a" {
		t.Fatalf("described member %+v", m)
	}
	if d := h.s.ShareGroupDescribe("nope", names); d.ErrorCode != kerr.GroupIDNotFound.Code || deref(d.ErrorMessage) != "Group nope not found." {
		t.Fatalf("describe of an unknown group: %+v", d)
	}
	var code int16 = -1
	h.run(h.s.DeleteGroup(h.now, "s", func(c int16) { code = c }))
	if code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete with members: %d", code)
	}
	h.ok(sgReq("s", "m1", LeaveMemberEpoch))
	h.ok(sgReq("s", "m2", LeaveMemberEpoch))
	h.run(h.s.DeleteGroup(h.now, "s", func(c int16) { code = c }))
	if code != 0 || h.s.ShareGroup("s") != nil {
		t.Fatalf("delete of the empty group: %d, group %v", code, h.s.ShareGroup("s"))
	}
	if s := replayLog(t, h.batches); len(s.ShareGroupIDs()) != 0 {
		t.Fatalf("a load after the deletion has share groups %v", s.ShareGroupIDs())
	}
}

// A failed initialization leaves the partitions to the next heartbeat; one not
// answered within group.share.initialize.retry.interval.ms is asked for again.
func TestShareGroupInitializeFailureAndRetry(t *testing.T) {
	h := newSG(t, cgTopics(1))
	h.ok(sgReq("s", "m1", 0, "a"))
	h.initialize(kerr.CoordinatorNotAvailable.Code)
	g := h.s.ShareGroup("s")
	if init, initializing, _ := g.SharePartitions(); len(init) != 0 || len(initializing) != 0 {
		t.Fatalf("after a failure: initialized %v initializing %v", init, initializing)
	}
	h.ok(sgReq("s", "m1", 1))
	if len(h.inits) != 1 {
		t.Fatalf("the next heartbeat asked %v", h.inits)
	}
	h.inits = nil
	h.now = h.now.Add(10 * time.Second)
	h.ok(sgReq("s", "m1", 1))
	if len(h.inits) != 0 {
		t.Fatalf("asked again within the retry interval: %v", h.inits)
	}
	h.now = h.now.Add(30 * time.Second)
	logged := len(h.log)
	h.ok(sgReq("s", "m1", 1))
	if len(h.inits) != 1 || len(h.log) != logged {
		t.Fatalf("after the retry interval: asked %v, wrote %d records", h.inits, len(h.log)-logged)
	}
}

// A failed write answers with its error, and the group's next write restates it so
// that the log loads to the live group.
func TestShareGroupWriteFailureResyncs(t *testing.T) {
	h := newSG(t, cgTopics(2))
	h.joinInitialized([]string{"m1", "m2"}, "a")
	h.writeCode = errNotCoordinator
	if resp := h.hb(sgReq("s", "m1", LeaveMemberEpoch)); resp.ErrorCode != errNotCoordinator {
		t.Fatalf("leave with a failed write: %d", resp.ErrorCode)
	}
	h.writeCode = 0
	m2, _ := h.s.ShareGroup("s").Member("m2")
	h.ok(sgReq("s", "m2", m2.MemberEpoch))
	checkShareReplay(t, h.s, replayLog(t, h.batches))
}

// A new coordinator loading the log starts every member's session.
func TestShareGroupFailover(t *testing.T) {
	h := newSG(t, cgTopics(2))
	h.joinInitialized([]string{"m1", "m2"}, "a")
	loaded := replayLog(t, h.batches)
	checkShareReplay(t, h.s, loaded)
	h.s = loaded
	h.run(h.s.Loaded(h.now))
	if at, ok := h.s.NextConsumerDeadline(); !ok || !at.Equal(h.now.Add(45*time.Second)) {
		t.Fatalf("deadline after the load %v %v", at, ok)
	}
	m1, _ := h.s.ShareGroup("s").Member("m1")
	if resp := h.ok(sgReq("s", "m1", m1.MemberEpoch)); resp.MemberEpoch != m1.MemberEpoch {
		t.Fatalf("heartbeat after failover: %+v", resp)
	}
}
