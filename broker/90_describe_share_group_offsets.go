package broker

// DescribeShareGroupOffsets (key 90), v0-1 (KIP-932; v1 adds each partition's Lag,
// KIP-1226): on the group's coordinator, the share-partition start offset and leader
// epoch of each partition from the share coordinators' state summaries
// (coordinator.GroupCoordinator.DescribeShareGroupOffsets); a group without topics
// named describes every partition whose share state it initialized. A partition
// without share state, or of a topic the image does not know, has start offset -1.
// Authorization is Kafka's handleDescribeShareGroupOffsetsRequest: DESCRIBE on each
// group (GROUP_AUTHORIZATION_FAILED), DESCRIBE on each topic named
// (TOPIC_AUTHORIZATION_FAILED on its partitions); a group described in full shows only
// the topics the caller may DESCRIBE.

import (
	"context"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/coordinator"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.DescribeShareGroupOffsets, 0, 1, (*Broker).handleDescribeShareGroupOffsets, apiOpts{
		authorize: authorizeDescribeShareGroupOffsets,
	})
}

func (b *Broker) handleDescribeShareGroupOffsets(ctx context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.DescribeShareGroupOffsetsRequest)
	return b.respondShareOffsets(ctx, func(code int16) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
		for _, g := range r.Groups {
			rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			rg.GroupID, rg.ErrorCode = g.GroupID, code
			resp.Groups = append(resp.Groups, rg)
		}
		return resp
	}, func(ctx context.Context, p coordinator.SharePersister, im coordinator.ShareOffsetsImage) kmsg.Response {
		return b.groups.DescribeShareGroupOffsets(ctx, r, p, im)
	})
}

// authorizeDescribeShareGroupOffsets is DescribeShareGroupOffsets' authorization rule
// (checkRequest): denied groups are answered GROUP_AUTHORIZATION_FAILED first, denied
// topics of the others TOPIC_AUTHORIZATION_FAILED, and a group described in full loses
// the topics the caller may not DESCRIBE.
func authorizeDescribeShareGroupOffsets(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.DescribeShareGroupOffsetsRequest)
	z := checksOf(b, req)
	var denied []kmsg.DescribeShareGroupOffsetsRequestGroup
	r.Groups, denied = split(r.Groups, func(g kmsg.DescribeShareGroupOffsetsRequestGroup) bool {
		return z.groupOK(auth.OpDescribe, g.GroupID)
	})
	deniedTopics := map[string][]kmsg.DescribeShareGroupOffsetsRequestGroupTopic{}
	whole := map[string]bool{}
	for i, g := range r.Groups {
		if g.Topics == nil {
			whole[g.GroupID] = true
			continue
		}
		var no []kmsg.DescribeShareGroupOffsetsRequestGroupTopic
		r.Groups[i].Topics, no = split(g.Topics, func(t kmsg.DescribeShareGroupOffsetsRequestGroupTopic) bool {
			return z.topicOK(auth.OpDescribe, t.Topic)
		})
		if len(no) > 0 {
			deniedTopics[g.GroupID] = no
		}
	}
	return authzDecision{merge: func(resp kmsg.Response) {
		out := resp.(*kmsg.DescribeShareGroupOffsetsResponse)
		for i, g := range out.Groups {
			if whole[g.GroupID] {
				out.Groups[i].Topics, _ = split(g.Topics, func(t kmsg.DescribeShareGroupOffsetsResponseGroupTopic) bool {
					return z.topicOK(auth.OpDescribe, t.Topic)
				})
			}
			for _, t := range deniedTopics[g.GroupID] {
				dt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
				dt.Topic = t.Topic
				for _, p := range t.Partitions {
					dp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
					dp.Partition, dp.StartOffset, dp.ErrorCode = p, -1, codeTopicAuthz
					dt.Partitions = append(dt.Partitions, dp)
				}
				out.Groups[i].Topics = append(out.Groups[i].Topics, dt)
			}
		}
		rows := make([]kmsg.DescribeShareGroupOffsetsResponseGroup, 0, len(denied)+len(out.Groups))
		for _, g := range denied {
			rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			rg.GroupID, rg.ErrorCode = g.GroupID, codeGroupAuthz
			rows = append(rows, rg)
		}
		out.Groups = append(rows, out.Groups...)
	}}
}
