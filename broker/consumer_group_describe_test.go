package broker

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// joinConsumerGroupDirect makes member join the KIP-848 consumer group id, subscribed
// to topics, by sending its ConsumerGroupHeartbeat straight to the group's shard (the
// way a heartbeat handler would), once the coordinator serves the group.
func joinConsumerGroupDirect(t *testing.T, b *Broker, id, member string, topics ...string) {
	t.Helper()
	// FindCoordinator creates __consumer_offsets; the shard then loads.
	if r := newAdmin(t, b).FindGroupCoordinators(testContext(t), id)[id]; r.Err != nil {
		t.Fatal(r.Err)
	}
	im := b.Image()
	image := group.ConsumerTopicMap{}
	for _, name := range im.TopicNames() {
		tp := im.Topic(name)
		image[name] = group.AssignorTopic{ID: tp.ID, Name: name, Partitions: int32(len(tp.Partitions))}
	}
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = 1, id, member, 0, 30000
	hb.SubscribedTopicNames, hb.Topics = topics, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	testwait.ForWhat(t, 30*time.Second, "the join", func() error {
		resp := <-b.groups.Respond(id, func(now time.Time, s *group.Shard, send func(kmsg.Response)) group.Effects {
			return s.ConsumerGroupHeartbeat(now, group.Client{ID: "direct", Host: "/127.0.0.1"}, hb, image, send)
		}, func(code int16) kmsg.Response {
			r := hb.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
			r.ErrorCode = code
			return r
		})
		if code := resp.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode; code != 0 {
			return kerr.ErrorForCode(code)
		}
		return nil
	})
}

// ConsumerGroupDescribe over the wire: advertised as v0-1, a consumer group is
// described with its members' assignments named from the image (kadm's
// DescribeConsumerGroups), a classic group and an unknown one are GROUP_ID_NOT_FOUND
// with Kafka's messages, and the authorized operations are every group operation
// without an authorizer.
func TestConsumerGroupDescribeWire(t *testing.T) {
	b := startTestBroker(t, "", nil)
	adm := newAdmin(t, b)
	ctx := testContext(t)
	mustCreateTopic(t, adm, "t", 3, nil)

	versions, err := adm.ApiVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range versions {
		if min, max, ok := v.KeyVersions(int16(kmsg.ConsumerGroupDescribe)); !ok || min != 0 || max != 1 {
			t.Fatalf("ConsumerGroupDescribe advertised %v %d-%d", ok, min, max)
		}
	}

	joinConsumerGroupDirect(t, b, "cg", "m1", "t")
	described, err := adm.DescribeConsumerGroups(ctx, "cg")
	if err != nil {
		t.Fatal(err)
	}
	d := described["cg"]
	if d.Err != nil || d.State != "Stable" || d.Epoch != 1 || d.AssignmentEpoch != 1 || d.AssignorName != "uniform" || len(d.Members) != 1 {
		t.Fatalf("described %+v", d)
	}
	m := d.Members[0]
	if m.MemberID != "m1" || m.ClientID != "direct" || m.MemberEpoch != 1 || m.MemberType != 1 ||
		fmt.Sprint(m.Assignment.Sorted()) != "[{t [0 1 2]}]" || fmt.Sprint(m.TargetAssignment.Sorted()) != "[{t [0 1 2]}]" {
		t.Fatalf("member %+v", m)
	}
	ops := map[kadm.ACLOperation]bool{}
	for _, op := range d.AuthorizedOperations {
		ops[op] = true
	}
	if !ops[kmsg.ACLOperationRead] || !ops[kmsg.ACLOperationDescribe] || !ops[kmsg.ACLOperationDelete] {
		t.Fatalf("authorized operations %v", d.AuthorizedOperations)
	}

	// A classic group (here, one holding committed offsets) and an unknown group.
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "t", Partition: 0, At: 1, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "classic", offsets); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, b)
	for id, msg := range map[string]string{"classic": "Group classic is not a consumer group.", "nope": "Group nope not found."} {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{id}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code || resp.Groups[0].ErrorMessage == nil ||
			*resp.Groups[0].ErrorMessage != msg {
			t.Fatalf("%s: %+v", id, resp.Groups)
		}
	}
	if ds, err := adm.DescribeConsumerGroups(ctx, "nope"); err != nil || !errors.Is(ds["nope"].Err, kerr.GroupIDNotFound) {
		t.Fatalf("kadm: %v %v", err, ds["nope"].Err)
	}
}

// ConsumerGroupDescribe's authorization: DESCRIBE on each group, the denied ones
// answered GROUP_AUTHORIZATION_FAILED ahead of the others; a described group whose
// members' assignments or targets name a topic the caller may not DESCRIBE becomes
// TOPIC_AUTHORIZATION_FAILED with Kafka's message and no members; errors pass as they
// are.
func TestAuthorize_ConsumerGroupDescribe(t *testing.T) {
	b := authzBroker(t) // alice may Read (so Describe) topic t, not u
	ctx := context.Background()
	acls := kmsg.NewPtrCreateACLsRequest()
	for _, g := range []string{"ok", "hidden", "target", "missing"} {
		acls.Creations = append(acls.Creations, aclCreation("User:alice", kmsg.ACLPermissionTypeAllow, kmsg.ACLResourceTypeGroup, g,
			kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationDescribe))
	}
	for _, r := range b.createACLs(ctx, acls).Results {
		if r.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(r.ErrorCode))
		}
	}
	assigned := func(topics ...string) kmsg.Assignment {
		var a kmsg.Assignment
		for _, tp := range topics {
			a.TopicPartitions = append(a.TopicPartitions, kmsg.AssignmentTopicPartition{Topic: tp, Partitions: []int32{0}})
		}
		return a
	}
	described := func(id string, current, target kmsg.Assignment) kmsg.ConsumerGroupDescribeResponseGroup {
		g := kmsg.NewConsumerGroupDescribeResponseGroup()
		g.Group, g.State = id, "Stable"
		m := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		m.MemberID, m.Assignment, m.TargetAssignment = "m", current, target
		g.Members = append(g.Members, m)
		return g
	}

	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{"ok", "denied", "hidden", "target", "missing"}
	d := b.checkRequest(as("User:alice", req))
	if d.answer != nil || d.merge == nil || fmt.Sprint(req.Groups) != "[ok hidden target missing]" {
		t.Fatalf("decision %+v, groups left %v", d, req.Groups)
	}
	// What the handler would answer for the groups let through.
	resp := kmsg.NewPtrConsumerGroupDescribeResponse()
	missing := kmsg.NewConsumerGroupDescribeResponseGroup()
	missing.Group, missing.ErrorCode = "missing", kerr.GroupIDNotFound.Code
	resp.Groups = []kmsg.ConsumerGroupDescribeResponseGroup{
		described("ok", assigned("t"), assigned("t")),
		described("hidden", assigned("t", "u"), assigned("t")),
		described("target", assigned(), assigned("u")),
		missing,
	}
	d.merge(resp)
	want := []struct {
		group string
		code  int16
	}{
		{"denied", kerr.GroupAuthorizationFailed.Code}, {"ok", 0}, {"hidden", kerr.TopicAuthorizationFailed.Code},
		{"target", kerr.TopicAuthorizationFailed.Code}, {"missing", kerr.GroupIDNotFound.Code},
	}
	if len(resp.Groups) != len(want) {
		t.Fatalf("groups %+v", resp.Groups)
	}
	for i, w := range want {
		g := resp.Groups[i]
		if g.Group != w.group || g.ErrorCode != w.code {
			t.Fatalf("row %d: %s %v, want %s %v", i, g.Group, kerr.ErrorForCode(g.ErrorCode), w.group, kerr.ErrorForCode(w.code))
		}
		if w.code == kerr.TopicAuthorizationFailed.Code && (len(g.Members) != 0 || g.ErrorMessage == nil ||
			*g.ErrorMessage != "The group has described topic(s) that the client is not authorized to describe.") {
			t.Fatalf("hidden group %+v", g)
		}
	}
	if len(resp.Groups[1].Members) != 1 {
		t.Fatal("the describable group lost its members")
	}

	// A super user sees everything.
	req = kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{"hidden"}
	resp = kmsg.NewPtrConsumerGroupDescribeResponse()
	resp.Groups = []kmsg.ConsumerGroupDescribeResponseGroup{described("hidden", assigned("u"), assigned("u"))}
	if out := decide(b, as("User:admin", req), resp).(*kmsg.ConsumerGroupDescribeResponse); len(out.Groups) != 1 || out.Groups[0].ErrorCode != 0 {
		t.Fatalf("super user: %+v", out.Groups)
	}
}
