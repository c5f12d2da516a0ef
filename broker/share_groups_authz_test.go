package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareGroupHeartbeat needs Read on the group, then Describe on every subscribed
// topic, as Kafka 4.2's KafkaApis: alice may read t (Read implies Describe) but not
// u, and group g only once granted; a refused heartbeat is answered whole.
func TestAuthorize_ShareGroupHeartbeat(t *testing.T) {
	checkHeartbeatAuthorization(t, func(topics ...string) kmsg.Request {
		r := kmsg.NewPtrShareGroupHeartbeatRequest()
		r.Version, r.GroupID, r.MemberID, r.SubscribedTopicNames = 1, "g", "m", topics
		return r
	}, func(resp kmsg.Response) int16 { return resp.(*kmsg.ShareGroupHeartbeatResponse).ErrorCode })
}

// ShareGroupDescribe's authorization: DESCRIBE on each group, the denied ones answered
// GROUP_AUTHORIZATION_FAILED ahead of the others; a described group whose members'
// assignments name a topic the caller may not DESCRIBE becomes
// TOPIC_AUTHORIZATION_FAILED with Kafka's message and no members; errors pass as
// they are; a super user sees everything; the authorized operations are the caller's.
func TestAuthorize_ShareGroupDescribe(t *testing.T) {
	b := authzBroker(t) // alice may Read (so Describe) topic t, not u
	ctx := context.Background()
	acls := kmsg.NewPtrCreateACLsRequest()
	for _, g := range []string{"ok", "hidden", "missing"} {
		acls.Creations = append(acls.Creations, aclCreation("User:alice", kmsg.ACLPermissionTypeAllow, kmsg.ACLResourceTypeGroup, g,
			kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationDescribe))
	}
	for _, r := range b.createACLs(ctx, acls).Results {
		if r.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(r.ErrorCode))
		}
	}
	described := func(id string, topics ...string) kmsg.ShareGroupDescribeResponseGroup {
		g := kmsg.NewShareGroupDescribeResponseGroup()
		g.GroupID, g.GroupState = id, "Stable"
		m := kmsg.NewShareGroupDescribeResponseGroupMember()
		m.MemberID = "m"
		for _, tp := range topics {
			a := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
			a.Topic, a.Partitions = tp, []int32{0}
			m.Assignment.TopicPartitions = append(m.Assignment.TopicPartitions, a)
		}
		g.Members = append(g.Members, m)
		return g
	}

	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{"ok", "denied", "hidden", "missing"}
	d := b.checkRequest(as("User:alice", req))
	if d.answer != nil || d.merge == nil || fmt.Sprint(req.GroupIDs) != "[ok hidden missing]" {
		t.Fatalf("decision %+v, groups left %v", d, req.GroupIDs)
	}
	resp := kmsg.NewPtrShareGroupDescribeResponse()
	missing := kmsg.NewShareGroupDescribeResponseGroup()
	missing.GroupID, missing.ErrorCode = "missing", kerr.GroupIDNotFound.Code
	resp.Groups = []kmsg.ShareGroupDescribeResponseGroup{described("ok", "t"), described("hidden", "t", "u"), missing}
	d.merge(resp)
	want := []struct {
		group string
		code  int16
	}{
		{"denied", kerr.GroupAuthorizationFailed.Code}, {"ok", 0}, {"hidden", kerr.TopicAuthorizationFailed.Code}, {"missing", kerr.GroupIDNotFound.Code},
	}
	if len(resp.Groups) != len(want) {
		t.Fatalf("groups %+v", resp.Groups)
	}
	for i, w := range want {
		g := resp.Groups[i]
		if g.GroupID != w.group || g.ErrorCode != w.code {
			t.Fatalf("row %d: %s %v, want %s %v", i, g.GroupID, kerr.ErrorForCode(g.ErrorCode), w.group, kerr.ErrorForCode(w.code))
		}
		if w.code == kerr.TopicAuthorizationFailed.Code && (len(g.Members) != 0 || derefOr(g.ErrorMessage) != undescribableTopicsMessage) {
			t.Fatalf("hidden group %+v", g)
		}
	}
	if len(resp.Groups[1].Members) != 1 {
		t.Fatal("the describable group lost its members")
	}

	req = kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{"hidden"}
	resp = kmsg.NewPtrShareGroupDescribeResponse()
	resp.Groups = []kmsg.ShareGroupDescribeResponseGroup{described("hidden", "u")}
	if out := decide(b, as("User:admin", req), resp).(*kmsg.ShareGroupDescribeResponse); len(out.Groups) != 1 || out.Groups[0].ErrorCode != 0 {
		t.Fatalf("super user: %+v", out.Groups)
	}
}

// ShareGroupDescribe through the coordinator: an empty group id is INVALID_GROUP_ID,
// an unknown one GROUP_ID_NOT_FOUND, in the request's order.
func TestShareGroupDescribeRefusals(t *testing.T) {
	b := startTestBroker(t, "", nil)
	if r := newAdmin(t, b).FindGroupCoordinators(testContext(t), "nope")["nope"]; r.Err != nil {
		t.Fatal(r.Err)
	}
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.Version, req.GroupIDs = 1, []string{"", "nope"}
	var got string
	testwait.Until(t, 30*time.Second, "the group's partition loaded", func() bool {
		resp := (<-b.groups.ShareGroupDescribe(req, imageTopicNames(b.Image()), nil)).(*kmsg.ShareGroupDescribeResponse)
		got = fmt.Sprintf("%q:%d %q:%d:%s", resp.Groups[0].GroupID, resp.Groups[0].ErrorCode, resp.Groups[1].GroupID, resp.Groups[1].ErrorCode,
			derefOr(resp.Groups[1].ErrorMessage))
		return resp.Groups[1].ErrorCode != kerr.CoordinatorLoadInProgress.Code
	})
	if want := fmt.Sprintf("\"\":%d \"nope\":%d:Group nope not found.", kerr.InvalidGroupID.Code, kerr.GroupIDNotFound.Code); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
