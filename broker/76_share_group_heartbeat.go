package broker

// ShareGroupHeartbeat (key 76), v1 (KIP-932; v0 was Kafka 4.0's early access, removed
// in 4.1): the one membership call of share groups. A member joins with epoch 0 and
// the member id it generated, heartbeats with its epoch, and leaves with -1; every
// member gets every partition of its subscribed topics whose share state is
// initialized (SimpleAssignor), so a partition is shared by the members. The group
// rules and their errors (INVALID_REQUEST, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH,
// GROUP_MAX_SIZE_REACHED, GROUP_ID_NOT_FOUND for a classic or consumer group's id)
// live in group/; NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS when the group's
// partition is not served here. The answer waits until the group's records are
// committed. The share state of newly subscribed partitions is initialized through
// the share coordinator (share_wiring.go) before they are assigned.

import (
	"context"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.ShareGroupHeartbeat, 1, 1, (*Broker).handleShareGroupHeartbeat, apiOpts{
		authorize: authorizeShareGroupHeartbeat,
	})
}

func (b *Broker) handleShareGroupHeartbeat(_ context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.ShareGroupHeartbeatRequest)
	return rpc.RespondLater(b.groups.ShareGroupHeartbeat(r, clientOf(req)))
}

// authorizeShareGroupHeartbeat is ShareGroupHeartbeat's authorization rule (Kafka
// 4.2's KafkaApis.handleShareGroupHeartbeat): READ on the group, else
// GROUP_AUTHORIZATION_FAILED; then DESCRIBE on every topic of SubscribedTopicNames,
// else TOPIC_AUTHORIZATION_FAILED for the whole request, without naming the topics.
func authorizeShareGroupHeartbeat(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.ShareGroupHeartbeatRequest)
	z := checksOf(b, req)
	refuse := func(code int16) authzDecision {
		return z.whole(func(resp kmsg.Response) { resp.(*kmsg.ShareGroupHeartbeatResponse).ErrorCode = code })
	}
	if !z.groupOK(auth.OpRead, r.GroupID) {
		return refuse(codeGroupAuthz)
	}
	for _, t := range r.SubscribedTopicNames {
		if !z.topicOK(auth.OpDescribe, t) {
			return refuse(codeTopicAuthz)
		}
	}
	return authzDecision{} // nothing refused
}
