package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerGroupHeartbeat needs Read on the group, then Describe on every subscribed
// topic, as Kafka 4's KafkaApis: alice may read t (Read implies Describe) but not u,
// and group g only once granted.
func TestAuthorize_ConsumerGroupHeartbeat(t *testing.T) {
	checkHeartbeatAuthorization(t, func(topics ...string) kmsg.Request {
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Version, r.Group, r.MemberID, r.SubscribedTopicNames = 1, "g", "m", topics
		return r
	}, func(resp kmsg.Response) int16 { return resp.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode })
}

// checkHeartbeatAuthorization checks a group heartbeat's rule (consumer and share
// groups alike): READ on the group, then DESCRIBE on every subscribed topic. hb builds
// the heartbeat of group g subscribing to topics; code reads a refusal's error code.
func checkHeartbeatAuthorization(t *testing.T, hb func(topics ...string) kmsg.Request, code func(kmsg.Response) int16) {
	b := authzBroker(t)
	refusal := func(r kmsg.Request) int16 {
		d := b.checkRequest(as("User:alice", r))
		if d.answer == nil {
			return 0
		}
		return code(d.answer)
	}
	if c := refusal(hb("t")); c != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("without Read on the group: %v", kerr.ErrorForCode(c))
	}
	acls := kmsg.NewPtrCreateACLsRequest()
	acls.Creations = append(acls.Creations, aclCreation("User:alice", kmsg.ACLPermissionTypeAllow, kmsg.ACLResourceTypeGroup, "g", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationRead))
	if r := b.createACLs(testContext(t), acls).Results; r[0].ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r[0].ErrorCode))
	}
	for _, tc := range []struct {
		topics []string
		want   int16
	}{
		{[]string{"t"}, 0},
		{nil, 0}, // a heartbeat that does not restate its subscription
		{[]string{"t", "u"}, kerr.TopicAuthorizationFailed.Code},
		{[]string{"missing"}, kerr.TopicAuthorizationFailed.Code}, // existence is not revealed
	} {
		if c := refusal(hb(tc.topics...)); c != tc.want {
			t.Errorf("subscribed to %v: %v, want %v", tc.topics, kerr.ErrorForCode(c), kerr.ErrorForCode(tc.want))
		}
	}
}
