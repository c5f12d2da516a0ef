package broker

// AlterShareGroupOffsets (key 91), v0 (KIP-932, kafka-share-groups.sh
// --reset-offsets --execute): on the group's coordinator, sets the share-partition
// start offsets of an empty share group (NON_EMPTY_GROUP otherwise; a group id that
// does not exist yet is created): the partitions are marked initializing under a
// bumped group epoch, initialized on the share coordinators
// (InitializeShareGroupState, that epoch as the state epoch) and then initialized in
// the group (coordinator.GroupCoordinator.AlterShareGroupOffsets). A partition of an
// unknown topic or beyond its partition count is UNKNOWN_TOPIC_OR_PARTITION.
// Authorization is Kafka's: READ on the group (GROUP_AUTHORIZATION_FAILED for the
// whole request), READ on each topic (TOPIC_AUTHORIZATION_FAILED on its partitions).

import (
	"context"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/coordinator"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.AlterShareGroupOffsets, 0, 0, (*Broker).handleAlterShareGroupOffsets, apiOpts{
		authorize: authorizeAlterShareGroupOffsets,
	})
}

func (b *Broker) handleAlterShareGroupOffsets(ctx context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.AlterShareGroupOffsetsRequest)
	return b.respondShareOffsets(ctx, func(code int16) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
		resp.ErrorCode = code
		return resp
	}, func(ctx context.Context, p coordinator.SharePersister, im coordinator.ShareOffsetsImage) kmsg.Response {
		return b.groups.AlterShareGroupOffsets(ctx, r, p, im)
	})
}

// authorizeAlterShareGroupOffsets is AlterShareGroupOffsets' authorization rule
// (checkRequest).
func authorizeAlterShareGroupOffsets(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.AlterShareGroupOffsetsRequest)
	z := checksOf(b, req)
	if !z.groupOK(auth.OpRead, r.GroupID) {
		return z.whole(func(resp kmsg.Response) {
			resp.(*kmsg.AlterShareGroupOffsetsResponse).ErrorCode = codeGroupAuthz
		})
	}
	var denied []kmsg.AlterShareGroupOffsetsRequestTopic
	r.Topics, denied = split(r.Topics, func(t kmsg.AlterShareGroupOffsetsRequestTopic) bool { return z.topicOK(auth.OpRead, t.Topic) })
	return mergeIf(len(denied) > 0, func(resp kmsg.Response) {
		out := resp.(*kmsg.AlterShareGroupOffsetsResponse)
		for _, t := range denied {
			rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, codeTopicAuthz
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	})
}
