package broker

// DeleteShareGroupOffsets (key 92), v0 (KIP-932, kafka-share-groups.sh --delete
// --delete-offsets): on the group's coordinator, deletes the share state of topics of
// an empty share group (NON_EMPTY_GROUP otherwise, GROUP_ID_NOT_FOUND for no share
// group): the topics move to the group's deleting topics, their partitions' state is
// deleted on the share coordinators (DeleteShareGroupState) and the group forgets
// them (coordinator.GroupCoordinator.DeleteShareGroupOffsets); a topic unknown, or
// without share state for the group, is UNKNOWN_TOPIC_OR_PARTITION. Authorization is
// Kafka's: DELETE on the group (GROUP_AUTHORIZATION_FAILED for the whole request),
// READ on each topic (TOPIC_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/coordinator"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.DeleteShareGroupOffsets, 0, 0, (*Broker).handleDeleteShareGroupOffsets, apiOpts{
		authorize: authorizeDeleteShareGroupOffsets,
	})
}

func (b *Broker) handleDeleteShareGroupOffsets(ctx context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.DeleteShareGroupOffsetsRequest)
	return b.respondShareOffsets(ctx, func(code int16) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
		resp.ErrorCode = code
		return resp
	}, func(ctx context.Context, p coordinator.SharePersister, im coordinator.ShareOffsetsImage) kmsg.Response {
		return b.groups.DeleteShareGroupOffsets(ctx, r, p, im)
	})
}

// authorizeDeleteShareGroupOffsets is DeleteShareGroupOffsets' authorization rule
// (checkRequest).
func authorizeDeleteShareGroupOffsets(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.DeleteShareGroupOffsetsRequest)
	z := checksOf(b, req)
	if !z.groupOK(auth.OpDelete, r.GroupID) {
		return z.whole(func(resp kmsg.Response) {
			resp.(*kmsg.DeleteShareGroupOffsetsResponse).ErrorCode = codeGroupAuthz
		})
	}
	var denied []kmsg.DeleteShareGroupOffsetsRequestTopic
	r.Topics, denied = split(r.Topics, func(t kmsg.DeleteShareGroupOffsetsRequestTopic) bool { return z.topicOK(auth.OpRead, t.Topic) })
	return mergeIf(len(denied) > 0, func(resp kmsg.Response) {
		out := resp.(*kmsg.DeleteShareGroupOffsetsResponse)
		for _, t := range denied {
			rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, codeTopicAuthz
			out.Topics = append(out.Topics, rt)
		}
	})
}
