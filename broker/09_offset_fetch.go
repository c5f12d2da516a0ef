package broker

// OffsetFetch (key 9), v0-10: one group before v8, many groups from v8 (KIP-709), each
// answered by its own shard; null topics (v2+) mean every committed partition;
// RequireStable (v7+) answers UNSTABLE_OFFSET_COMMIT for partitions with a commit being
// written. A group whose partition is not served here gets NOT_COORDINATOR or
// COORDINATOR_LOAD_IN_PROGRESS (per partition before v2, which has no group error).
//
// Version notes: v9 (KIP-848) names the member asking (MemberID, MemberEpoch): against
// a consumer group a stale epoch is the group's STALE_MEMBER_EPOCH, an unknown member
// UNKNOWN_MEMBER_ID. v10 names topics by id (offset_topic_ids.go): an unknown id is
// UNKNOWN_TOPIC_ID; authorization stays per topic name.

import (
	"context"
	"slices"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.OffsetFetch, 0, 10, (*Broker).handleOffsetFetch, apiOpts{
		authorize: authorizeOffsetFetch,
	})
}

func (b *Broker) handleOffsetFetch(_ context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.OffsetFetchRequest)
	serve := func() rpc.Result { return rpc.RespondLater(b.groups.OffsetFetch(r)) }
	if fetchUsesTopicIDs(r.Version) {
		return fetchWithTopicIDs(b.Image(), r, serve)
	}
	return serve()
}

// authorizeOffsetFetch is OffsetFetch's rule: Describe on the group
// (GROUP_AUTHORIZATION_FAILED), and only the topics the principal may Describe are
// answered (named ones it may not get TOPIC_AUTHORIZATION_FAILED).
func authorizeOffsetFetch(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.OffsetFetchRequest)
	z := checksOf(b, req)
	if r.Version >= 8 {
		var denied []kmsg.OffsetFetchRequestGroup
		r.Groups, denied = split(r.Groups, func(g kmsg.OffsetFetchRequestGroup) bool { return z.groupOK(auth.OpDescribe, g.Group) })
		return authzDecision{merge: func(resp kmsg.Response) {
			out := resp.(*kmsg.OffsetFetchResponse)
			for i := range out.Groups {
				out.Groups[i].Topics = slices.DeleteFunc(out.Groups[i].Topics, func(t kmsg.OffsetFetchResponseGroupTopic) bool {
					unknownID := fetchUsesTopicIDs(r.Version) && t.Topic == "" // UNKNOWN_TOPIC_ID
					return !unknownID && !z.topicOK(auth.OpDescribe, t.Topic)
				})
			}
			for _, g := range denied {
				rg := kmsg.NewOffsetFetchResponseGroup()
				rg.Group, rg.ErrorCode = g.Group, codeGroupAuthz
				out.Groups = append(out.Groups, rg)
			}
		}}
	}
	if !z.groupOK(auth.OpDescribe, r.Group) {
		return z.whole(func(resp kmsg.Response) {
			out := resp.(*kmsg.OffsetFetchResponse)
			out.ErrorCode = codeGroupAuthz
			offsetFetchErrors(out, r.Topics, codeGroupAuthz)
		})
	}
	all := r.Topics == nil
	var denied []kmsg.OffsetFetchRequestTopic
	if !all {
		r.Topics, denied = split(r.Topics, func(t kmsg.OffsetFetchRequestTopic) bool { return z.topicOK(auth.OpDescribe, t.Topic) })
	}
	return authzDecision{merge: func(resp kmsg.Response) {
		out := resp.(*kmsg.OffsetFetchResponse)
		out.Topics = slices.DeleteFunc(out.Topics, func(t kmsg.OffsetFetchResponseTopic) bool { return !z.topicOK(auth.OpDescribe, t.Topic) })
		offsetFetchErrors(out, denied, codeTopicAuthz)
	}}
}

// offsetFetchErrors answers every partition of topics (before v8) in out with code.
func offsetFetchErrors(out *kmsg.OffsetFetchResponse, topics []kmsg.OffsetFetchRequestTopic, code int16) {
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		out.Topics = append(out.Topics, rt)
	}
}
