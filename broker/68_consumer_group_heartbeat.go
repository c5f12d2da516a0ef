package broker

// ConsumerGroupHeartbeat (key 68), v0-1: the one membership call of KIP-848 consumer
// groups (join with epoch 0, heartbeat, leave with -1 or -2); v1 (KIP-1082) has the
// client generate its member id and adds SubscribedTopicRegex. The group rules and
// their errors (INVALID_REQUEST, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, ...) live in
// group/; NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS when the group's partition is
// not served here. The answer waits until the group's records are committed.

import (
	"context"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.ConsumerGroupHeartbeat, 0, 1, (*Broker).handleConsumerGroupHeartbeat, apiOpts{
		authorize: authorizeConsumerGroupHeartbeat,
	})
}

func (b *Broker) handleConsumerGroupHeartbeat(_ context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.ConsumerGroupHeartbeatRequest)
	// The client id and host are stored for display (ConsumerGroupDescribe) only.
	// A regular expression keeps the topics the principal may DESCRIBE (Kafka 4's
	// filterTopicDescribeAuthorizedTopics).
	var describable func(string) bool
	if b.authzEnabled() {
		z := b.checks(req)
		describable = func(topic string) bool { return z.Topic(auth.OpDescribe, topic) }
	}
	return rpc.RespondLater(b.groups.ConsumerGroupHeartbeat(r, clientOf(req), describable))
}

// authorizeConsumerGroupHeartbeat is ConsumerGroupHeartbeat's authorization rule
// (Kafka 4's KafkaApis.handleConsumerGroupHeartbeat, KAFKA-18813): READ on the group,
// else GROUP_AUTHORIZATION_FAILED; then DESCRIBE on every topic of
// SubscribedTopicNames, else TOPIC_AUTHORIZATION_FAILED for the whole request, with no
// message, as Kafka answers (a client may not learn which topics exist that it cannot
// describe). A regex subscription is resolved by the coordinator, which keeps the
// matched topics the principal may DESCRIBE.
func authorizeConsumerGroupHeartbeat(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.ConsumerGroupHeartbeatRequest)
	z := checksOf(b, req)
	if !z.groupOK(auth.OpRead, r.Group) {
		return z.whole(func(resp kmsg.Response) {
			resp.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode = codeGroupAuthz
		})
	}
	for _, t := range r.SubscribedTopicNames {
		if !z.topicOK(auth.OpDescribe, t) {
			return z.whole(func(resp kmsg.Response) {
				resp.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode = codeTopicAuthz
			})
		}
	}
	return authzDecision{} // nothing refused
}
