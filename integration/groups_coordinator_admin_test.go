package integration

// Group coordinator: bad input over raw requests (Kafka's error codes, no panic, a
// bounded group under a JoinGroup flood) and the admin APIs' outcomes.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// stableMember joins group alone and syncs as its leader; it returns the member id and
// generation.
func stableMember(t testing.TB, ctx context.Context, r *rawTo, group string, topics ...string) (string, int32) {
	t.Helper()
	j := joinRaw(ctx, r, group, "consumer", nil, topics...)
	if j.ErrorCode != 0 {
		t.Fatalf("join %s: %v", group, kerr.ErrorForCode(j.ErrorCode))
	}
	if code := syncRaw(ctx, r, group, j.MemberID, j.Generation); code != 0 {
		t.Fatalf("sync %s: %v", group, kerr.ErrorForCode(code))
	}
	return j.MemberID, j.Generation
}

func codeName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	return kerr.ErrorForCode(code).Error()
}

func TestGroupCoordinator_BadInput(t *testing.T) {
	t.Parallel()
	opts := append(groupOptions(), WithProperty("group.max.size", "3"), WithProperty("offsets.topic.num.partitions", "3"))
	c := StartCluster(t, 1, opts...)
	ctx := testContext(t)
	c.CreateTopic(t, "bad", 1, nil)
	coordinatorOf(t, c, 0, "g1")
	r := c.rawTo(t, 0)
	expect := func(what string, got, want int16) {
		t.Helper()
		if got != want {
			t.Errorf("%s: %s, want %s", what, codeName(got), codeName(want))
		}
	}

	// Request validation.
	expect("join with an empty group id", joinRaw(ctx, r, "", "consumer", nil).ErrorCode, kerr.InvalidGroupID.Code)
	short := kmsg.NewPtrJoinGroupRequest()
	short.Group, short.ProtocolType, short.SessionTimeoutMillis, short.RebalanceTimeoutMillis = "g-short", "consumer", 500, 1000
	short.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
	expect("join with a session timeout below group.min.session.timeout.ms",
		r.do(ctx, short).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InvalidSessionTimeout.Code)
	expect("join with no protocol type", joinRaw(ctx, r, "g-empty-type", "", nil).ErrorCode, kerr.InconsistentGroupProtocol.Code)

	// A protocol type the group does not use.
	m1, gen1 := stableMember(t, ctx, r, "g1", "bad")
	expect("join with another protocol type", joinRaw(ctx, c.rawTo(t, 0), "g1", "connect", nil).ErrorCode, kerr.InconsistentGroupProtocol.Code)

	// A member id from another group.
	stableMember(t, ctx, c.rawTo(t, 0), "g2", "bad")
	expect("heartbeat with another group's member id", heartbeatRaw(ctx, r, "g2", m1, gen1), kerr.UnknownMemberID.Code)
	expect("commit with another group's member id", commitRaw(ctx, r, "g2", m1, gen1, "bad", 1, ""), kerr.UnknownMemberID.Code)

	// A generation from the past: the leader rejoins, the group moves on.
	m1b, gen2 := stableMember(t, ctx, r, "g1", "bad")
	if m1b == m1 || gen2 <= gen1 {
		t.Logf("rejoined as %s generation %d (was %s %d)", m1b, gen2, m1, gen1)
	}
	expect("heartbeat of the current generation", heartbeatRaw(ctx, r, "g1", m1b, gen2), 0)
	expect("heartbeat from a past generation", heartbeatRaw(ctx, r, "g1", m1b, gen2-1), kerr.IllegalGeneration.Code)
	expect("commit from a past generation", commitRaw(ctx, r, "g1", m1b, gen2-1, "bad", 1, ""), kerr.IllegalGeneration.Code)

	// Commits: oversized metadata, a topic that does not exist, a simple consumer.
	expect("commit with metadata over offset.metadata.max.bytes",
		commitRaw(ctx, r, "g1", m1b, gen2, "bad", 1, strings.Repeat("m", 4097)), kerr.OffsetMetadataTooLarge.Code)
	expect("commit to a topic that does not exist", commitRaw(ctx, r, "g1", m1b, gen2, "no-such-topic", 1, ""), kerr.UnknownTopicOrPartition.Code)
	expect("commit of the member", commitRaw(ctx, r, "g1", m1b, gen2, "bad", 7, "ok"), 0)
	expect("simple consumer commit", commitRaw(ctx, r, "g-simple", "", -1, "bad", 3, ""), 0)
	expect("simple consumer commit into a group with members", commitRaw(ctx, r, "g1", "", -1, "bad", 3, ""), kerr.UnknownMemberID.Code)

	// A JoinGroup flood bounded by group.max.size=3: never more than 3 members.
	var wg sync.WaitGroup
	codes := make([]int16, 8)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = joinRaw(ctx, c.rawTo(t, 0), "g-flood", "consumer", nil, "bad").ErrorCode
		}()
	}
	wg.Wait()
	refused := 0
	for _, code := range codes {
		switch code {
		case 0:
		case kerr.GroupMaxSizeReached.Code:
			refused++
		default:
			t.Errorf("flooding join answered %s", codeName(code))
		}
	}
	// Members that joined but never synced are removed after the rebalance timeout,
	// making room for later ones: what matters is the refusals and the group's size.
	if refused == 0 {
		t.Errorf("no flooding member got GROUP_MAX_SIZE_REACHED (group.max.size=3): %v", codes)
	}
	if g := describeRaw(ctx, r, "g-flood"); len(g.Members) > 3 {
		t.Fatalf("g-flood has %d members, group.max.size is 3", len(g.Members))
	}
	// Many first joins (member id required) from one client: each is answered, none
	// grows the group past its maximum.
	for i := range 300 {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version = 5
		req.Group, req.ProtocolType, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = "g-flood", "consumer", 10000, 10000
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
		code := r.do(ctx, req).(*kmsg.JoinGroupResponse).ErrorCode
		if code != kerr.MemberIDRequired.Code && code != kerr.GroupMaxSizeReached.Code && code != kerr.RebalanceInProgress.Code {
			t.Fatalf("flood join %d: %s", i, codeName(code))
		}
	}
	if g := describeRaw(ctx, r, "g-flood"); len(g.Members) > 3 {
		t.Fatalf("g-flood has %d members, group.max.size is 3", len(g.Members))
	}
	// The broker still serves groups.
	after, afterGen := stableMember(t, ctx, c.rawTo(t, 0), "g-after", "bad")
	expect("heartbeat after the flood", heartbeatRaw(ctx, r, "g-after", after, afterGen), 0)
}

func TestGroupCoordinator_AdminOutcomes(t *testing.T) {
	t.Parallel()
	opts := append(groupOptions(), WithProperty("offsets.topic.num.partitions", "4"))
	c := StartCluster(t, 1, opts...)
	ctx := testContext(t)
	c.CreateTopic(t, "subscribed", 1, nil)
	c.CreateTopic(t, "other", 1, nil)
	coordinatorOf(t, c, 0, "g-stable")
	r := c.rawTo(t, 0)

	member, gen := stableMember(t, ctx, r, "g-stable", "subscribed")
	if code := commitRaw(ctx, r, "g-stable", member, gen, "subscribed", 5, ""); code != 0 {
		t.Fatalf("commit: %s", codeName(code))
	}
	if code := commitRaw(ctx, r, "g-stable", member, gen, "other", 9, ""); code != 0 {
		t.Fatalf("commit: %s", codeName(code))
	}
	if code := commitRaw(ctx, r, "g-empty", "", -1, "subscribed", 2, ""); code != 0 {
		t.Fatalf("simple commit: %s", codeName(code))
	}

	if g := describeRaw(ctx, r, "no-such-group"); g.ErrorCode != 0 || g.State != "Dead" || len(g.Members) != 0 {
		t.Fatalf("unknown group described as %s %q with %d members, want Dead", codeName(g.ErrorCode), g.State, len(g.Members))
	}
	if g := describeRaw(ctx, r, "g-stable"); g.State != "Stable" || g.ProtocolType != "consumer" || g.Protocol != "range" || len(g.Members) != 1 {
		t.Fatalf("g-stable described as %q %q %q with %d members", g.State, g.ProtocolType, g.Protocol, len(g.Members))
	}

	list := func(states ...string) []string {
		req := kmsg.NewPtrListGroupsRequest()
		req.StatesFilter = states
		resp := r.do(ctx, req).(*kmsg.ListGroupsResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("ListGroups: %s", codeName(resp.ErrorCode))
		}
		var out []string
		for _, g := range resp.Groups {
			out = append(out, g.Group+"/"+g.GroupState)
		}
		slices.Sort(out)
		return out
	}
	if got := fmt.Sprint(list()); got != "[g-empty/Empty g-stable/Stable]" {
		t.Fatalf("ListGroups: %s", got)
	}
	if got := fmt.Sprint(list("Stable")); got != "[g-stable/Stable]" {
		t.Fatalf("ListGroups states=Stable: %s", got)
	}

	// OffsetDelete: refused for a subscribed topic, done for another.
	od := func(group, topic string) (int16, int16) {
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = group
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = topic
		rt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
		req.Topics = append(req.Topics, rt)
		resp := r.do(ctx, req).(*kmsg.OffsetDeleteResponse)
		var part int16
		if len(resp.Topics) > 0 && len(resp.Topics[0].Partitions) > 0 {
			part = resp.Topics[0].Partitions[0].ErrorCode
		}
		return resp.ErrorCode, part
	}
	if top, part := od("g-stable", "subscribed"); top != 0 || part != kerr.GroupSubscribedToTopic.Code {
		t.Fatalf("OffsetDelete of a subscribed topic: %s / %s, want GROUP_SUBSCRIBED_TO_TOPIC", codeName(top), codeName(part))
	}
	if top, part := od("g-stable", "other"); top != 0 || part != 0 {
		t.Fatalf("OffsetDelete of an unsubscribed topic: %s / %s", codeName(top), codeName(part))
	}
	if top, _ := od("no-such-group", "other"); top != kerr.GroupIDNotFound.Code {
		t.Fatalf("OffsetDelete of an unknown group: %s, want GROUP_ID_NOT_FOUND", codeName(top))
	}
	offsets, err := committedOffsets(ctx, c.Client(t), "g-stable")
	if err != nil {
		t.Fatal(err)
	}
	if len(offsets) != 1 || offsets[0] != 5 {
		t.Fatalf("g-stable's offsets after OffsetDelete: %v, want only subscribed at 5", offsets)
	}

	// DeleteGroups: a non-empty group, an empty one, an unknown one, an empty id.
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g-stable", "g-empty", "no-such-group", ""}
	dresp := r.do(ctx, del).(*kmsg.DeleteGroupsResponse)
	got := map[string]int16{}
	for _, g := range dresp.Groups {
		got[g.Group] = g.ErrorCode
	}
	want := map[string]int16{"g-stable": kerr.NonEmptyGroup.Code, "g-empty": 0, "no-such-group": kerr.GroupIDNotFound.Code, "": kerr.InvalidGroupID.Code}
	for g, code := range want {
		if got[g] != code {
			t.Errorf("DeleteGroups %q: %s, want %s", g, codeName(got[g]), codeName(code))
		}
	}
	if got := fmt.Sprint(list()); got != "[g-stable/Stable]" {
		t.Fatalf("ListGroups after deleting g-empty: %s", got)
	}
	offsets, err = committedOffsets(ctx, c.Client(t), "g-empty")
	if err != nil {
		t.Fatal(err)
	}
	for p, o := range offsets {
		if o >= 0 {
			t.Fatalf("deleted group still has offset %d on partition %d", o, p)
		}
	}
}
