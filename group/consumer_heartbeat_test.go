package group

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func wantError(t *testing.T, resp *kmsg.ConsumerGroupHeartbeatResponse, err *kerr.Error, msg string) {
	t.Helper()
	if resp.ErrorCode != err.Code {
		t.Fatalf("error %v (%s), want %v", kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage), err)
	}
	if msg != "" && deref(resp.ErrorMessage) != msg {
		t.Fatalf("message %q, want %q", deref(resp.ErrorMessage), msg)
	}
}

func TestConsumerHeartbeatValidation(t *testing.T) {
	cases := []struct {
		name string
		mod  func(r *kmsg.ConsumerGroupHeartbeatRequest)
		err  *kerr.Error
		msg  string
	}{
		{"v1 join without member id", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" },
			kerr.InvalidRequest, "MemberId can't be empty."},
		{"blank group", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = " " },
			kerr.InvalidRequest, "GroupId can't be empty."},
		{"blank instance id", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.InstanceID = kmsg.StringPtr("") },
			kerr.InvalidRequest, "InstanceId can't be empty."},
		{"blank rack", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RackID = kmsg.StringPtr("") },
			kerr.InvalidRequest, "RackId can't be empty."},
		{"join without rebalance timeout", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 },
			kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request."},
		{"join with owned partitions", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.Topics = ownedTopics(AssignedPartitions{testTopicID(1): {0}})
		},
			kerr.InvalidRequest, "TopicPartitions must be empty when (re-)joining."},
		{"join with null owned partitions", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Topics = nil },
			kerr.InvalidRequest, "TopicPartitions must be empty when (re-)joining."},
		{"join without subscription", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = nil },
			kerr.InvalidRequest, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."},
		{"static leave without instance id", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -2 },
			kerr.InvalidRequest, "InstanceId can't be null."},
		{"epoch below -2", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -3 },
			kerr.InvalidRequest, "MemberEpoch is invalid."},
		{"unknown assignor", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = kmsg.StringPtr("sticky") },
			kerr.UnsupportedAssignor, "ServerAssignor sticky is not supported. Supported assignors: uniform, range."},
		{"unknown member", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = 3; r.MemberID = "nobody" },
			kerr.UnknownMemberID, "Member nobody is not a member of group g."},
		{"unknown member leaving", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -1; r.MemberID = "nobody" },
			kerr.UnknownMemberID, "Member nobody is not a member of group g."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newCG(t, testConsumerConfig(), cgTopics(4))
			req := cgJoinRequest("m1", "a")
			c.mod(req)
			wantError(t, h.send(req), c.err, c.msg)
			if h.g.NumMembers() != 0 || h.g.GroupEpoch() != 0 {
				t.Fatalf("a rejected request changed the group: %d members, epoch %d", h.g.NumMembers(), h.g.GroupEpoch())
			}
		})
	}
}

func TestConsumerJoin(t *testing.T) {
	h := newCG(t, testConsumerConfig(), cgTopics(3))
	// v1: the client's member id is kept (KIP-1082).
	resp := h.ok(cgJoinRequest("client-made", "a"))
	if deref(resp.MemberID) != "client-made" || resp.MemberEpoch != 1 || resp.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("join response: member %q epoch %d interval %d", deref(resp.MemberID), resp.MemberEpoch, resp.HeartbeatIntervalMillis)
	}
	if got := respAssignment(resp); countPartitions(got) != 3 {
		t.Fatalf("first member got %v, want all 3 partitions", got)
	}
	// v0: the coordinator makes the member id.
	req := cgJoinRequest("", "a")
	req.Version = 0
	resp = h.ok(req)
	if deref(resp.MemberID) != "generated-1" || resp.MemberEpoch != 2 {
		t.Fatalf("v0 join: member %q epoch %d", deref(resp.MemberID), resp.MemberEpoch)
	}
	// The second member gets nothing yet: every partition is still the first one's.
	if got := respAssignment(resp); got == nil || countPartitions(got) != 0 {
		t.Fatalf("second member got %v, want an empty assignment", got)
	}
	if v, _ := h.g.Member("generated-1"); v.State != MemberUnreleasedPartitions {
		t.Fatalf("second member state %v, want unreleased_partitions", v.State)
	}
	if h.g.State() != ConsumerGroupReconciling {
		t.Fatalf("group state %v, want Reconciling", h.g.State())
	}
}

// revocationGroup has m1 at epoch 2 (previous 1) owning two partitions of "a" and m2
// at epoch 2 owning the other two.
func revocationGroup(t *testing.T) (*cgHarness, AssignedPartitions, AssignedPartitions) {
	t.Helper()
	h := newCG(t, testConsumerConfig(), cgTopics(4))
	all := respAssignment(h.join("m1", "a"))
	h.join("m2", "a")
	r := h.ok(cgHBRequest("m1", 1, all))
	if r.MemberEpoch != 1 {
		t.Fatalf("m1 moved to epoch %d before revoking", r.MemberEpoch)
	}
	keep := respAssignment(r)
	if countPartitions(keep) != 2 {
		t.Fatalf("m1 keeps %v, want 2 partitions", keep)
	}
	if v, _ := h.g.Member("m1"); v.State != MemberUnrevokedPartitions || countPartitions(v.PendingRevocation) != 2 {
		t.Fatalf("m1 is %v pending %v, want unrevoked_partitions with 2 pending", v.State, v.PendingRevocation)
	}
	// m2 asks again: the partitions are still m1's, so it gets none.
	if r := h.ok(cgHBRequest("m2", 2, AssignedPartitions{})); countPartitions(respAssignment(r)) != 0 {
		t.Fatalf("m2 got %v while m1 still owns them", respAssignment(r))
	}
	r = h.ok(cgHBRequest("m1", 1, keep))
	if r.MemberEpoch != 2 {
		t.Fatalf("m1 at epoch %d after revoking, want 2", r.MemberEpoch)
	}
	r = h.ok(cgHBRequest("m2", 2, AssignedPartitions{}))
	got := respAssignment(r)
	if countPartitions(got) != 2 {
		t.Fatalf("m2 got %v after m1 revoked, want 2 partitions", got)
	}
	if h.g.State() != ConsumerGroupStable {
		t.Fatalf("group %v, want Stable", h.g.State())
	}
	return h, keep, got
}

func TestConsumerRevokeBeforeAssign(t *testing.T) {
	revocationGroup(t)
}

func TestConsumerMemberEpochFencing(t *testing.T) {
	cases := []struct {
		name  string
		epoch int32
		owned func(keep AssignedPartitions) AssignedPartitions
		err   *kerr.Error
		msg   string
	}{
		{"greater epoch", 3, func(k AssignedPartitions) AssignedPartitions { return k }, kerr.FencedMemberEpoch,
			"The consumer group member has a greater member epoch (3) than the one known by the group coordinator (2). The member must abandon all its partitions and rejoin."},
		{"previous epoch owning a subset", 1, func(k AssignedPartitions) AssignedPartitions { return k }, nil, ""},
		{"previous epoch owning more", 1, func(AssignedPartitions) AssignedPartitions {
			return AssignedPartitions{testTopicID(1): {0, 1, 2, 3}}
		}, kerr.FencedMemberEpoch,
			"The consumer group member has a smaller member epoch (1) than the one known by the group coordinator (2). The member must abandon all its partitions and rejoin."},
		{"previous epoch not reporting", 1, func(AssignedPartitions) AssignedPartitions { return nil }, kerr.FencedMemberEpoch, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, keep, _ := revocationGroup(t)
			resp := h.send(cgHBRequest("m1", c.epoch, c.owned(keep)))
			if c.err == nil {
				if resp.ErrorCode != 0 || resp.MemberEpoch != 2 {
					t.Fatalf("got %v epoch %d, want accepted at epoch 2", kerr.ErrorForCode(resp.ErrorCode), resp.MemberEpoch)
				}
				return
			}
			wantError(t, resp, c.err, c.msg)
		})
	}
	t.Run("stale epoch", func(t *testing.T) {
		h, keep, _ := revocationGroup(t)
		h.join("m3", "a")
		// m1 must revoke for epoch 3, and acknowledges it; epoch 1 is now two behind.
		h.ok(cgHBRequest("m1", 2, keep))
		v, _ := h.g.Member("m1")
		h.ok(cgHBRequest("m1", 2, v.Assigned))
		wantError(t, h.send(cgHBRequest("m1", 1, AssignedPartitions{})), kerr.FencedMemberEpoch, "")
	})
	t.Run("fenced member rejoins with epoch 0", func(t *testing.T) {
		h, keep, _ := revocationGroup(t)
		resp := h.ok(cgJoinRequest("m1", "a"))
		if resp.MemberEpoch != 2 || !assignmentsEqual(respAssignment(resp), keep) {
			t.Fatalf("rejoin: epoch %d assignment %v, want 2 and %v", resp.MemberEpoch, respAssignment(resp), keep)
		}
	})
}

func TestConsumerLeave(t *testing.T) {
	h, _, _ := revocationGroup(t)
	epoch := h.g.GroupEpoch()
	n := len(h.events)
	resp := h.ok(cgHBRequest("m1", -1, nil))
	if resp.MemberEpoch != -1 || deref(resp.MemberID) != "m1" {
		t.Fatalf("leave response: member %q epoch %d", deref(resp.MemberID), resp.MemberEpoch)
	}
	evs := h.events[n:]
	if len(evs) != 2 || evs[0] != (ConsumerMemberRemoved{MemberID: "m1"}) {
		t.Fatalf("leave events %v", evs)
	}
	if b, ok := evs[1].(ConsumerGroupEpochBumped); !ok || b.Epoch != epoch+1 {
		t.Fatalf("leave events %v, want the group epoch bumped to %d", evs, epoch+1)
	}
	if h.g.State() != ConsumerGroupAssigning {
		t.Fatalf("group %v after a leave, want Assigning", h.g.State())
	}
	// The next heartbeat computes the new target: m2 takes every partition at once
	// (m1's are free).
	resp = h.ok(cgHBRequest("m2", 2, nil))
	if resp.MemberEpoch != epoch+1 || countPartitions(respAssignment(resp)) != 4 {
		t.Fatalf("m2 after m1 left: epoch %d assignment %v", resp.MemberEpoch, respAssignment(resp))
	}
	wantError(t, h.send(cgHBRequest("m1", 2, nil)), kerr.UnknownMemberID, "Member m1 is not a member of group g.")
}

func TestConsumerStaticMembership(t *testing.T) {
	h := newCG(t, testConsumerConfig(), cgTopics(4))
	first := respAssignment(h.ok(staticReq(cgJoinRequest("s1", "a"), "i1")))
	h.ok(staticReq(cgJoinRequest("d1", "a"), "i2"))
	h.ok(staticReq(cgHBRequest("s1", 1, first), "i1"))
	v, _ := h.g.Member("s1")
	owned := v.Assigned

	// A new member id for an instance whose member is still active.
	wantError(t, h.send(staticReq(cgJoinRequest("s1-new", "a"), "i1")), kerr.UnreleasedInstanceID,
		"Static member s1-new with instance id i1 cannot join the group because the instance id is owned by s1 member.")
	wantError(t, h.send(staticReq(cgHBRequest("other", 2, owned), "i1")), kerr.FencedInstanceID,
		"Static member other with instance id i1 was fenced by member s1.")
	wantError(t, h.send(staticReq(cgHBRequest("x", 2, nil), "i9")), kerr.UnknownMemberID, "Instance id i9 is unknown.")

	// A temporary leave keeps the member and its assignment, at epoch -2.
	epoch := h.g.GroupEpoch()
	resp := h.ok(staticReq(cgHBRequest("s1", -2, nil), "i1"))
	if resp.MemberEpoch != -2 {
		t.Fatalf("static leave answered epoch %d", resp.MemberEpoch)
	}
	if v, ok := h.g.Member("s1"); !ok || v.MemberEpoch != -2 || !assignmentsEqual(v.Assigned, owned) || h.g.GroupEpoch() != epoch {
		t.Fatalf("after a static leave: member %+v group epoch %d (was %d)", v, h.g.GroupEpoch(), epoch)
	}
	// The instance comes back under a new member id and takes the old one's place.
	resp = h.ok(staticReq(cgJoinRequest("s1-new", "a"), "i1"))
	if _, ok := h.g.Member("s1"); ok {
		t.Fatal("the replaced member is still in the group")
	}
	if !assignmentsEqual(respAssignment(resp), owned) || resp.MemberEpoch != epoch || h.g.GroupEpoch() != epoch {
		t.Fatalf("replacement got %v at epoch %d (group %d), want %v at %d", respAssignment(resp), resp.MemberEpoch, h.g.GroupEpoch(), owned, epoch)
	}
	if id, _ := h.g.StaticMemberID("i1"); id != "s1-new" {
		t.Fatalf("instance i1 held by %q", id)
	}
	wantError(t, h.send(staticReq(cgHBRequest("s1", epoch, nil), "i1")), kerr.FencedInstanceID, "")

	// A temporary leave that does not come back ends with the session timeout.
	h.ok(staticReq(cgHBRequest("s1-new", -2, nil), "i1"))
	h.now = h.now.Add(44 * time.Second)
	h.ok(staticReq(cgHBRequest("d1", h.g.GroupEpoch(), nil), "i2"))
	if evs := h.expire(); len(evs) != 0 {
		t.Fatalf("expired before the session timeout: %v", evs)
	}
	h.now = h.now.Add(time.Second)
	if evs := h.expire(); len(evs) != 2 || evs[0] != (ConsumerMemberRemoved{MemberID: "s1-new"}) {
		t.Fatalf("expiry events %v", evs)
	}
	if _, ok := h.g.StaticMemberID("i1"); ok {
		t.Fatal("instance i1 still held after its member expired")
	}
}

func TestConsumerGroupEpochBumps(t *testing.T) {
	h := newCG(t, testConsumerConfig(), cgTopics(2))
	h.join("m1", "a", "b")
	if h.g.GroupEpoch() != 1 {
		t.Fatalf("epoch %d after the first join", h.g.GroupEpoch())
	}
	n := len(h.events)
	h.ok(cgHBRequest("m1", 1, nil))
	if h.g.GroupEpoch() != 1 || len(h.events) != n {
		t.Fatalf("a plain heartbeat bumped the epoch to %d / wrote %v", h.g.GroupEpoch(), h.events[n:])
	}
	// Topic b appears: the subscribed metadata changed.
	h.topics["b"] = AssignorTopic{ID: testTopicID(2), Name: "b", Partitions: 2}
	resp := h.ok(cgHBRequest("m1", 1, nil))
	if h.g.GroupEpoch() != 2 || resp.MemberEpoch != 2 || countPartitions(respAssignment(resp)) != 4 {
		t.Fatalf("after b was created: group epoch %d, member %d, assignment %v", h.g.GroupEpoch(), resp.MemberEpoch, respAssignment(resp))
	}
	// a grows.
	h.topics["a"] = AssignorTopic{ID: testTopicID(1), Name: "a", Partitions: 5}
	resp = h.ok(cgHBRequest("m1", 2, nil))
	if h.g.GroupEpoch() != 3 || countPartitions(respAssignment(resp)) != 7 {
		t.Fatalf("after a grew: group epoch %d, assignment %v", h.g.GroupEpoch(), respAssignment(resp))
	}
	// The subscription changes: b is dropped, and revoked first.
	req := cgHBRequest("m1", 3, respAssignment(resp))
	req.SubscribedTopicNames = []string{"a"}
	resp = h.ok(req)
	if h.g.GroupEpoch() != 4 || resp.MemberEpoch != 3 || countPartitions(respAssignment(resp)) != 5 {
		t.Fatalf("after dropping b: group epoch %d, member epoch %d, assignment %v", h.g.GroupEpoch(), resp.MemberEpoch, respAssignment(resp))
	}
	resp = h.ok(cgHBRequest("m1", 3, respAssignment(resp)))
	if resp.MemberEpoch != 4 {
		t.Fatalf("member epoch %d after revoking b, want 4", resp.MemberEpoch)
	}
	// An unchanged subscription sent again does not bump.
	req = cgHBRequest("m1", 4, nil)
	req.SubscribedTopicNames = []string{"a", "a"}
	h.ok(req)
	if h.g.GroupEpoch() != 4 {
		t.Fatalf("an unchanged subscription bumped the epoch to %d", h.g.GroupEpoch())
	}
}

func TestConsumerMaxSize(t *testing.T) {
	cfg := testConsumerConfig()
	cfg.MaxSize = 2
	h := newCG(t, cfg, cgTopics(2))
	h.join("m1", "a")
	h.join("m2", "a")
	wantError(t, h.send(cgJoinRequest("m3", "a")), kerr.GroupMaxSizeReached,
		"The consumer group has reached its maximum capacity of 2 members.")
	// Members already in the group go on.
	h.ok(cgJoinRequest("m1", "a"))
	h.ok(cgHBRequest("m2", h.g.GroupEpoch(), nil))
}

func TestConsumerSessionTimeout(t *testing.T) {
	h := newCG(t, testConsumerConfig(), cgTopics(2))
	h.join("m1", "a")
	h.join("m2", "a")
	if at, ok := h.g.NextDeadline(); !ok || !at.Equal(h.now.Add(45*time.Second)) {
		t.Fatalf("next deadline %v %v", at, ok)
	}
	h.now = h.now.Add(30 * time.Second)
	h.ok(cgHBRequest("m1", 1, nil))
	h.now = h.now.Add(15 * time.Second)
	evs := h.expire()
	if len(evs) != 2 || evs[0] != (ConsumerMemberRemoved{MemberID: "m2"}) {
		t.Fatalf("expiry at 45 s: %v", evs)
	}
	if _, ok := h.g.Member("m1"); !ok {
		t.Fatal("m1 heartbeated but expired")
	}
}

func TestConsumerRebalanceTimeout(t *testing.T) {
	h := newCG(t, testConsumerConfig(), cgTopics(4))
	all := respAssignment(h.join("m1", "a"))
	h.join("m2", "a")
	h.ok(cgHBRequest("m1", 1, all)) // now revoking, rebalance timeout 30 s
	for i := 0; i < 3; i++ {
		h.now = h.now.Add(10 * time.Second)
		if i < 2 && len(h.expire()) != 0 {
			t.Fatalf("m1 expired before its rebalance timeout")
		}
		// m1 keeps heartbeating but never lets go.
		h.ok(cgHBRequest("m1", 1, all))
	}
	// The heartbeat at 30 s came first; at the deadline the member goes.
	if evs := h.expire(); len(evs) != 2 || evs[0] != (ConsumerMemberRemoved{MemberID: "m1"}) {
		t.Fatalf("rebalance timeout expiry: %v", evs)
	}
	resp := h.ok(cgHBRequest("m2", 2, AssignedPartitions{}))
	if countPartitions(respAssignment(resp)) != 4 {
		t.Fatalf("m2 got %v after m1 was fenced", respAssignment(resp))
	}
}

func TestConsumerServerAssignor(t *testing.T) {
	// Two topics of two partitions: range gives each member one partition of each
	// topic (co-partitioned); uniform balances two partitions each, whatever topics.
	h := newCG(t, testConsumerConfig(), cgTopics(2, 2))
	req := cgJoinRequest("m1", "a", "b")
	req.ServerAssignor = kmsg.StringPtr("range")
	h.ok(req)
	req = cgJoinRequest("m2", "a", "b")
	req.ServerAssignor = kmsg.StringPtr("range")
	h.ok(req)
	v, _ := h.g.Member("m2")
	if len(v.Target) != 2 || len(v.Target[testTopicID(1)]) != 1 || len(v.Target[testTopicID(2)]) != 1 {
		t.Fatalf("range target of m2: %v", v.Target)
	}
	if v.ServerAssignor != "range" {
		t.Fatalf("stored server assignor %q", v.ServerAssignor)
	}
}

func TestConsumerReplayAndTimers(t *testing.T) {
	h, _, _ := revocationGroup(t)
	r := NewConsumerGroup("g", h.g.cfg)
	for _, ev := range h.events {
		r.Replay(ev)
	}
	if _, ok := r.NextDeadline(); ok {
		t.Fatal("timers run before StartTimers")
	}
	if evs := r.Expire(h.now.Add(time.Hour), h.topics); len(evs) != 0 {
		t.Fatalf("members expired before their timers started: %v", evs)
	}
	r.StartTimers(h.now)
	if at, ok := r.NextDeadline(); !ok || !at.Equal(h.now.Add(45*time.Second)) {
		t.Fatalf("next deadline after StartTimers: %v %v", at, ok)
	}
	if r.State() != ConsumerGroupStable || !strings.EqualFold(r.State().String(), "stable") {
		t.Fatalf("replayed group %v", r.State())
	}
}

// failingAssignor is an assignor that cannot assign.
type failingAssignor struct{}

func (failingAssignor) Name() string { return "failing" }
func (failingAssignor) Assign([]AssignorMember, []AssignorTopic) (map[string]AssignedPartitions, error) {
	return nil, ErrInvalidAssignorInput
}

func TestConsumerAssignorFailureChangesNothing(t *testing.T) {
	cfg := testConsumerConfig()
	cfg.Assignors = []Assignor{failingAssignor{}}
	h := newCG(t, cfg, cgTopics(2))
	resp := h.send(cgJoinRequest("m1", "a"))
	wantError(t, resp, kerr.UnknownServerError, "Failed to compute a new target assignment for epoch 1: "+ErrInvalidAssignorInput.Error())
	if h.g.NumMembers() != 0 || h.g.GroupEpoch() != 0 || h.g.State() != ConsumerGroupEmpty {
		t.Fatalf("a failed assignment changed the group: %d members, epoch %d, %v", h.g.NumMembers(), h.g.GroupEpoch(), h.g.State())
	}
}

func TestConsumerRegexStoredOnly(t *testing.T) {
	h := newCG(t, testConsumerConfig(), cgTopics(2))
	h.join("m1", "a")
	req := cgJoinRequest("m2")
	req.SubscribedTopicNames = nil
	req.SubscribedTopicRegex = kmsg.StringPtr("a.*")
	resp := h.ok(req)
	v, _ := h.g.Member("m2")
	if v.SubscribedTopicRegex != "a.*" || len(v.SubscribedTopicNames) != 0 {
		t.Fatalf("stored subscription: names %v regex %q", v.SubscribedTopicNames, v.SubscribedTopicRegex)
	}
	// The regex is not resolved yet: it matches nothing, but its change bumps the epoch.
	if h.g.GroupEpoch() != 2 || countPartitions(respAssignment(resp)) != 0 {
		t.Fatalf("group epoch %d, regex member got %v", h.g.GroupEpoch(), respAssignment(resp))
	}
}

// TestConsumerRackAwareTarget: the rack a member sends in its heartbeat (the Java
// client's client.rack) reaches the assignor, and with the partitions' replica racks
// from the topic image the group's target gives each member the partitions of its rack.
func TestConsumerRackAwareTarget(t *testing.T) {
	topics := cgTopics(4)
	a := topics["a"]
	a.PartitionRacks = [][]string{{"r1"}, {"r2"}, {"r1"}, {"r2"}}
	topics["a"] = a
	h := newCG(t, testConsumerConfig(), topics)
	for _, m := range []struct{ id, rack string }{{"m1", "r2"}, {"m2", "r1"}} {
		req := cgJoinRequest(m.id, "a")
		req.RackID = kmsg.StringPtr(m.rack)
		h.ok(req)
	}
	id := testTopicID(1)
	for member, want := range map[string][]int32{"m1": {1, 3}, "m2": {0, 2}} {
		v, _ := h.g.Member(member)
		if got := v.Target[id]; !slices.Equal(got, want) {
			t.Errorf("%s's target %v, want %v (the partitions of its rack)", member, v.Target, want)
		}
	}
}
