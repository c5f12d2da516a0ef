package broker

import (
	"testing"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The share group offsets APIs' authorization, as Kafka's KafkaApis: DescribeShareGroupOffsets
// needs DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED rows first) and on each topic
// named (TOPIC_AUTHORIZATION_FAILED), and a group described in full loses the topics the
// caller may not describe; AlterShareGroupOffsets needs READ on the group and on each
// topic, DeleteShareGroupOffsets DELETE on the group and READ on each topic.
func TestAuthorize_ShareGroupOffsets(t *testing.T) {
	b := authzBroker(t) // alice may Read (so Describe) topic t, not u
	ctx := testContext(t)
	acls := kmsg.NewPtrCreateACLsRequest()
	for group, op := range map[string]kmsg.ACLOperation{"ok": kmsg.ACLOperationDescribe, "whole": kmsg.ACLOperationDescribe,
		"rd": kmsg.ACLOperationRead, "del": kmsg.ACLOperationDelete} {
		acls.Creations = append(acls.Creations, aclCreation("User:alice", kmsg.ACLPermissionTypeAllow, kmsg.ACLResourceTypeGroup, group,
			kmsg.ACLResourcePatternTypeLiteral, op))
	}
	for _, r := range b.createACLs(ctx, acls).Results {
		if r.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(r.ErrorCode))
		}
	}
	describe := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	for _, g := range []kmsg.DescribeShareGroupOffsetsRequestGroup{
		{GroupID: "ok", Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}, {Topic: "u", Partitions: []int32{0}}}},
		{GroupID: "no"},
		{GroupID: "whole"},
	} {
		describe.Groups = append(describe.Groups, g)
	}
	testwait.Until(t, 10*time.Second, "alice's ACLs apply", func() bool {
		return b.checks(as("User:alice", describe)).Group(auth.OpDelete, "del")
	})
	answer := kmsg.NewPtrDescribeShareGroupOffsetsResponse()
	for _, g := range []struct {
		id     string
		topics []string
	}{{"ok", []string{"t"}}, {"whole", []string{"t", "u"}}} {
		rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		rg.GroupID = g.id
		for _, name := range g.topics {
			rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			rt.Topic = name
			rt.Partitions = []kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition{kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()}
			rg.Topics = append(rg.Topics, rt)
		}
		answer.Groups = append(answer.Groups, rg)
	}
	out := decide(b, as("User:alice", describe), answer).(*kmsg.DescribeShareGroupOffsetsResponse)
	if len(describe.Groups) != 2 || len(describe.Groups[0].Topics) != 1 || describe.Groups[0].Topics[0].Topic != "t" || describe.Groups[1].Topics != nil {
		t.Fatalf("let through %+v", describe.Groups)
	}
	if len(out.Groups) != 3 || out.Groups[0].GroupID != "no" || out.Groups[0].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("described %+v", out.Groups)
	}
	if ok := out.Groups[1]; len(ok.Topics) != 2 || ok.Topics[1].Topic != "u" || ok.Topics[1].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("group ok %+v", ok.Topics)
	}
	if whole := out.Groups[2]; len(whole.Topics) != 1 || whole.Topics[0].Topic != "t" {
		t.Fatalf("group described in full %+v", whole.Topics)
	}

	alter := func(group string) *kmsg.AlterShareGroupOffsetsRequest {
		req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		req.GroupID = group
		for _, name := range []string{"t", "u"} {
			req.Topics = append(req.Topics, kmsg.AlterShareGroupOffsetsRequestTopic{Topic: name,
				Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0}}})
		}
		return req
	}
	if resp := decide(b, as("User:alice", alter("ok")), nil).(*kmsg.AlterShareGroupOffsetsResponse); resp.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("alter without READ on the group: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	req := alter("rd")
	resp := decide(b, as("User:alice", req), kmsg.NewPtrAlterShareGroupOffsetsResponse()).(*kmsg.AlterShareGroupOffsetsResponse)
	if len(req.Topics) != 1 || req.Topics[0].Topic != "t" || len(resp.Topics) != 1 || resp.Topics[0].Topic != "u" ||
		resp.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alter: let through %+v, refused %+v", req.Topics, resp.Topics)
	}

	del := func(group string) *kmsg.DeleteShareGroupOffsetsRequest {
		req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
		req.GroupID = group
		req.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "t"}, {Topic: "u"}}
		return req
	}
	if resp := decide(b, as("User:alice", del("rd")), nil).(*kmsg.DeleteShareGroupOffsetsResponse); resp.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("delete without DELETE on the group: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	dreq := del("del")
	dresp := decide(b, as("User:alice", dreq), kmsg.NewPtrDeleteShareGroupOffsetsResponse()).(*kmsg.DeleteShareGroupOffsetsResponse)
	if len(dreq.Topics) != 1 || dreq.Topics[0].Topic != "t" || len(dresp.Topics) != 1 || dresp.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("delete: let through %+v, refused %+v", dreq.Topics, dresp.Topics)
	}
}
