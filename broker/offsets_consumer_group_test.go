package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// consumerGroupBroker is a one-node broker with topic "a" (2 partitions) and a KIP-848
// consumer group "cg" whose member "m1" subscribes to it, put into the group's shard
// through the coordinator (no ConsumerGroupHeartbeat handler is needed); it returns
// the member's epoch and the topic's id.
func consumerGroupBroker(t *testing.T) (b *Broker, epoch int32, topicID [16]byte) {
	t.Helper()
	b = startTestBroker(t, "", nil)
	mustCreateTopic(t, newAdmin(t, b), "a", 2, nil)
	topicID = [16]byte(b.Image().Topic("a").ID)
	topics := group.ConsumerTopicMap{"a": {ID: topicID, Name: "a", Partitions: 2}}
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.MemberEpoch = 1, "cg", "m1", 0
	hb.RebalanceTimeoutMillis, hb.SubscribedTopicNames, hb.Topics = 30_000, []string{"a"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	cl := newClient(t, b)
	testwait.For(t, 30*time.Second, func() error { // __consumer_offsets is created, the group's partition loads
		find := kmsg.NewPtrFindCoordinatorRequest()
		find.CoordinatorKeys = []string{"cg"}
		if _, err := find.RequestWith(testContext(t), cl); err != nil {
			return err
		}
		ch := b.groups.Respond("cg", func(now time.Time, s *group.Shard, send func(kmsg.Response)) group.Effects {
			return s.ConsumerGroupHeartbeat(now, group.Client{ID: "test", Host: "/127.0.0.1"}, hb, topics, send)
		}, func(code int16) kmsg.Response {
			resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
			resp.ErrorCode = code
			return resp
		})
		resp := (<-ch).(*kmsg.ConsumerGroupHeartbeatResponse)
		if resp.ErrorCode != 0 {
			return kerr.ErrorForCode(resp.ErrorCode)
		}
		epoch = resp.MemberEpoch
		return nil
	})
	return b, epoch, topicID
}

// clientAt is a client of b that sends key at most at version.
func clientAt(t *testing.T, b *Broker, key kmsg.Key, version int16) *kgo.Client {
	v := kversion.Stable()
	v.SetMaxKeyVersion(key.Int16(), version)
	return newClient(t, b, kgo.MaxVersions(v))
}

// commitOne commits offset to partition 0 of topic a (by name, or by id from v10) for
// member at epoch, and returns the answer's only partition.
func commitOne(t *testing.T, cl *kgo.Client, version int16, member string, epoch int32, topicID [16]byte, offset int64) (kmsg.OffsetCommitResponseTopic, int16) {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = "cg", member, epoch
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic, rt.TopicID = "a", topicID
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset = offset
	rt.Partitions = []kmsg.OffsetCommitRequestTopicPartition{rp}
	req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
	resp, err := req.RequestWith(testContext(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version != version || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("v%d answer %+v, want v%d with one partition", resp.Version, resp, version)
	}
	return resp.Topics[0], resp.Topics[0].Partitions[0].ErrorCode
}

// OffsetCommit v9 and v10 against a KIP-848 consumer group over the wire: the member
// commits at its epoch; a stale epoch is STALE_MEMBER_EPOCH, an unknown member
// UNKNOWN_MEMBER_ID, a member's v8 commit UNSUPPORTED_VERSION; v10 names the topic by
// id and an unknown id is UNKNOWN_TOPIC_ID, echoed.
func TestOffsetCommitConsumerGroupWire(t *testing.T) {
	b, epoch, topicID := consumerGroupBroker(t)
	v8, v9, v10 := clientAt(t, b, kmsg.OffsetCommit, 8), clientAt(t, b, kmsg.OffsetCommit, 9), newClient(t, b)
	for _, tc := range []struct {
		name    string
		cl      *kgo.Client
		version int16
		member  string
		epoch   int32
		id      [16]byte
		want    int16
	}{
		{"v9 at the member epoch", v9, 9, "m1", epoch, [16]byte{}, 0},
		{"v9 stale epoch", v9, 9, "m1", epoch - 1, [16]byte{}, kerr.StaleMemberEpoch.Code},
		{"v9 unknown member", v9, 9, "m9", epoch, [16]byte{}, kerr.UnknownMemberID.Code},
		{"v9 admin commit of a group with members", v9, 9, "", -1, [16]byte{}, kerr.UnknownMemberID.Code},
		{"v8 from a member", v8, 8, "m1", epoch, [16]byte{}, kerr.UnsupportedVersion.Code},
		{"v10 by topic id", v10, 10, "m1", epoch, topicID, 0},
		{"v10 stale epoch", v10, 10, "m1", epoch + 1, topicID, kerr.StaleMemberEpoch.Code},
		{"v10 unknown topic id", v10, 10, "m1", epoch, [16]byte{1, 2, 3}, kerr.UnknownTopicID.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic, code := commitOne(t, tc.cl, tc.version, tc.member, tc.epoch, tc.id, 77)
			if code != tc.want {
				t.Fatalf("got %v, want %v", kerr.ErrorForCode(code), kerr.ErrorForCode(tc.want))
			}
			if tc.version >= 10 && topic.TopicID != tc.id {
				t.Fatalf("answer names topic id %x, want %x", topic.TopicID, tc.id)
			}
		})
	}
}

// OffsetFetch v9 and v10 against a KIP-848 consumer group over the wire: v10 names
// topics by id (an unknown id is UNKNOWN_TOPIC_ID; every offset of the group comes
// with its topic's id); a stale member epoch is the group's STALE_MEMBER_EPOCH.
func TestOffsetFetchConsumerGroupWire(t *testing.T) {
	b, epoch, topicID := consumerGroupBroker(t)
	v10 := newClient(t, b)
	if _, code := commitOne(t, v10, 10, "m1", epoch, topicID, 55); code != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(code))
	}
	fetch := func(cl *kgo.Client, member *string, memberEpoch int32, topics []kmsg.OffsetFetchRequestGroupTopic) kmsg.OffsetFetchResponseGroup {
		t.Helper()
		req := kmsg.NewPtrOffsetFetchRequest()
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group, rg.MemberID, rg.MemberEpoch, rg.Topics = "cg", member, memberEpoch, topics
		req.Groups = []kmsg.OffsetFetchRequestGroup{rg}
		resp, err := req.RequestWith(testContext(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Groups) != 1 {
			t.Fatalf("answer %+v", resp)
		}
		return resp.Groups[0]
	}
	m1 := "m1"
	unknown := [16]byte{9, 9, 9}
	got := fetch(v10, &m1, epoch, []kmsg.OffsetFetchRequestGroupTopic{{TopicID: topicID, Partitions: []int32{0}}, {TopicID: unknown, Partitions: []int32{0, 1}}})
	if got.ErrorCode != 0 || len(got.Topics) != 2 {
		t.Fatalf("v10 fetch %+v", got)
	}
	if tp := got.Topics[0]; tp.TopicID != topicID || tp.Partitions[0].Offset != 55 || tp.Partitions[0].ErrorCode != 0 {
		t.Fatalf("known id %+v", tp)
	}
	if tp := got.Topics[1]; tp.TopicID != unknown || len(tp.Partitions) != 2 || tp.Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("unknown id %+v", tp)
	}
	all := fetch(v10, nil, -1, nil)
	if all.ErrorCode != 0 || len(all.Topics) != 1 || all.Topics[0].TopicID != topicID || all.Topics[0].Partitions[0].Offset != 55 {
		t.Fatalf("v10 fetch of every offset %+v", all)
	}
	stale := fetch(v10, &m1, epoch-1, []kmsg.OffsetFetchRequestGroupTopic{{TopicID: topicID, Partitions: []int32{0}}})
	if stale.ErrorCode != kerr.StaleMemberEpoch.Code || len(stale.Topics) != 0 {
		t.Fatalf("stale epoch %+v", stale)
	}
	v9 := clientAt(t, b, kmsg.OffsetFetch, 9)
	stranger := "m9"
	if g := fetch(v9, &stranger, epoch, []kmsg.OffsetFetchRequestGroupTopic{{Topic: "a", Partitions: []int32{0}}}); g.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("v9 unknown member %+v", g)
	}
	if g := fetch(v9, &m1, epoch, []kmsg.OffsetFetchRequestGroupTopic{{Topic: "a", Partitions: []int32{0}}}); g.ErrorCode != 0 || g.Topics[0].Partitions[0].Offset != 55 {
		t.Fatalf("v9 member %+v", g)
	}
}

// The classic group APIs see a KIP-848 consumer group as Kafka 4.2 does: DescribeGroups
// v6 GROUP_ID_NOT_FOUND "Group cg is not a classic group." (v5: Dead, no error),
// ListGroups v5 type and protocol type "consumer", filtered by type; OffsetDelete of a
// subscribed topic GROUP_SUBSCRIBED_TO_TOPIC, DeleteGroups NON_EMPTY_GROUP.
func TestClassicGroupAPIsSeeConsumerGroupWire(t *testing.T) {
	b, _, _ := consumerGroupBroker(t)
	describe := func(version int16, id string) kmsg.DescribeGroupsResponseGroup {
		t.Helper()
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{id}
		resp, err := req.RequestWith(testContext(t), clientAt(t, b, kmsg.DescribeGroups, version))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Version != version || len(resp.Groups) != 1 {
			t.Fatalf("answer %+v", resp)
		}
		return resp.Groups[0]
	}
	for _, tc := range []struct {
		version int16
		id      string
		code    int16
		message string
	}{
		{6, "cg", kerr.GroupIDNotFound.Code, "Group cg is not a classic group."},
		{5, "cg", 0, ""},
		{6, "nope", kerr.GroupIDNotFound.Code, "Group nope not found."},
	} {
		testwait.For(t, 10*time.Second, func() error {
			g := describe(tc.version, tc.id)
			if g.ErrorCode == kerr.CoordinatorLoadInProgress.Code || g.ErrorCode == kerr.NotCoordinator.Code {
				return kerr.ErrorForCode(g.ErrorCode)
			}
			msg := ""
			if g.ErrorMessage != nil {
				msg = *g.ErrorMessage
			}
			if g.State != "Dead" || g.ErrorCode != tc.code || msg != tc.message {
				return testwait.Permanent(fmt.Errorf("v%d %s: %+v %q", tc.version, tc.id, g, msg))
			}
			return nil
		})
	}
	list := kmsg.NewPtrListGroupsRequest()
	list.TypesFilter = []string{"consumer"}
	resp, err := list.RequestWith(context.Background(), newClient(t, b))
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 || len(resp.Groups) != 1 || resp.Groups[0].Group != "cg" || resp.Groups[0].GroupType != "consumer" ||
		resp.Groups[0].ProtocolType != "consumer" || resp.Groups[0].GroupState != "Stable" {
		t.Fatalf("ListGroups %+v", resp)
	}
	list.TypesFilter = []string{"classic"}
	if resp, err := list.RequestWith(testContext(t), newClient(t, b)); err != nil || len(resp.Groups) != 0 {
		t.Fatalf("classic groups %+v %v", resp, err)
	}

	// The member subscribes to a: its offsets cannot be deleted, nor the group.
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "cg"
	od.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "a", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	odResp, err := od.RequestWith(testContext(t), newClient(t, b))
	if err != nil || odResp.ErrorCode != 0 || len(odResp.Topics) != 1 || odResp.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code {
		t.Fatalf("OffsetDelete %+v %v", odResp, err)
	}
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"cg"}
	dgResp, err := dg.RequestWith(testContext(t), newClient(t, b))
	if err != nil || len(dgResp.Groups) != 1 || dgResp.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("DeleteGroups %+v %v", dgResp, err)
	}
}

// The authorization rules of OffsetCommit and OffsetFetch hold in v10: topics named by
// id are authorized by their names (TOPIC_AUTHORIZATION_FAILED echoes the id), an
// unknown id is left to the handler's UNKNOWN_TOPIC_ID, not refused, and OffsetFetch
// leaves out the offsets of topics the principal may not describe but keeps the
// UNKNOWN_TOPIC_ID answers.
func TestAuthorize_OffsetsByTopicID(t *testing.T) {
	b := authzBroker(t) // alice may Read topic t
	ctx := testContext(t)
	acls := kmsg.NewPtrCreateACLsRequest()
	acls.Creations = append(acls.Creations, aclCreation("User:alice", kmsg.ACLPermissionTypeAllow, kmsg.ACLResourceTypeGroup, "cg", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationRead))
	for _, r := range b.createACLs(ctx, acls).Results {
		if r.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(r.ErrorCode))
		}
	}
	idT, idU, unknown := [16]byte(b.Image().Topic("t").ID), [16]byte(b.Image().Topic("u").ID), [16]byte{7}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group = 10, "cg"
	for _, id := range [][16]byte{idT, idU, unknown} {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.TopicID = id
		rt.Partitions = []kmsg.OffsetCommitRequestTopicPartition{kmsg.NewOffsetCommitRequestTopicPartition()}
		commit.Topics = append(commit.Topics, rt)
	}
	testwait.Until(t, 10*time.Second, "alice's ACLs apply", func() bool { return b.checks(as("User:alice", commit)).Group(auth.OpRead, "cg") })
	resp := decide(b, as("User:alice", commit), kmsg.NewPtrOffsetCommitResponse()).(*kmsg.OffsetCommitResponse)
	if len(commit.Topics) != 2 || commit.Topics[0].Topic != "t" || commit.Topics[1].TopicID != unknown || commit.Topics[1].Topic != "" {
		t.Fatalf("let through %+v", commit.Topics)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].TopicID != idU || resp.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("refused %+v", resp.Topics)
	}

	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version = 10
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{kmsg.NewOffsetFetchRequestGroup()}
	fetch.Groups[0].Group = "cg"
	out := kmsg.NewPtrOffsetFetchResponse()
	rg := kmsg.NewOffsetFetchResponseGroup()
	rg.Group = "cg"
	for _, tp := range []struct {
		name string
		id   [16]byte
	}{{"t", idT}, {"u", idU}, {"", unknown}} {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic, rt.TopicID = tp.name, tp.id
		rg.Topics = append(rg.Topics, rt)
	}
	out.Groups = []kmsg.OffsetFetchResponseGroup{rg}
	got := decide(b, as("User:alice", fetch), out).(*kmsg.OffsetFetchResponse)
	if ts := got.Groups[0].Topics; len(ts) != 2 || ts[0].TopicID != idT || ts[1].TopicID != unknown {
		t.Fatalf("fetch answer %+v", ts)
	}
}
