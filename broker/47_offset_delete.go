package broker

// OffsetDelete (key 47), v0: deletes committed offsets of partitions the group is not
// subscribed to (GROUP_SUBSCRIBED_TO_TOPIC otherwise, GROUP_ID_NOT_FOUND for an
// unknown group; the rules live in group/). INVALID_GROUP_ID for an empty group id.

import (
	"context"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.OffsetDelete, 0, 0, (*Broker).handleOffsetDelete, apiOpts{
		authorize: authorizeOffsetDelete,
	})
}

func (b *Broker) handleOffsetDelete(_ context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.OffsetDeleteRequest)
	failed := func(code int16) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = code
		return resp
	}
	if r.Group == "" {
		return rpc.Respond(failed(kerr.InvalidGroupID.Code))
	}
	return rpc.RespondLater(b.groups.Respond(r.Group, func(now time.Time, s *group.Shard, send func(kmsg.Response)) group.Effects {
		return s.OffsetDelete(now, r, send)
	}, failed))
}

// authorizeOffsetDelete is OffsetDelete's authorization rule (checkRequest).
func authorizeOffsetDelete(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.OffsetDeleteRequest)
	z := checksOf(b, req)
	if !z.groupOK(auth.OpDelete, r.Group) {
		return z.whole(func(resp kmsg.Response) { resp.(*kmsg.OffsetDeleteResponse).ErrorCode = codeGroupAuthz })
	}
	var denied []kmsg.OffsetDeleteRequestTopic
	r.Topics, denied = split(r.Topics, func(t kmsg.OffsetDeleteRequestTopic) bool { return z.topicOK(auth.OpRead, t.Topic) })
	return mergeIf(len(denied) > 0, func(resp kmsg.Response) {
		out := resp.(*kmsg.OffsetDeleteResponse)
		for _, t := range denied {
			rt := kmsg.NewOffsetDeleteResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetDeleteResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, codeTopicAuthz
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	})
}
