package broker

// OffsetCommit (key 8), v0-10. Partitions of topics that do not exist (or beyond their
// partition count) are answered UNKNOWN_TOPIC_OR_PARTITION here and the rest goes to
// the group's shard (generation -1 with an empty member id is a simple consumer's
// commit; the rules live in group/). The answer waits until the commit is replicated
// (acks=all, offsets.commit.timeout.ms). INVALID_GROUP_ID for an empty group id;
// NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS on every partition when the group's
// partition is not served here.
//
// Version notes: v9 (KIP-848) carries a consumer group member's id and member epoch in
// MemberID and Generation (STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID; a consumer group's
// member must use v9+). v10 names topics by id (offset_topic_ids.go): an unknown id is
// UNKNOWN_TOPIC_ID; authorization stays per topic name.

import (
	"context"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.OffsetCommit, 0, 10, (*Broker).handleOffsetCommit, apiOpts{
		authorize: authorizeOffsetCommit,
		fillError: fillErrorOffsetCommit,
	})
}

func (b *Broker) handleOffsetCommit(_ context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.OffsetCommitRequest)
	failed := func(code int16) kmsg.Response { return errorResponse(r, code, nil) }
	if r.Group == "" {
		return rpc.Respond(failed(kerr.InvalidGroupID.Code))
	}
	im := b.Image()
	known := func(topic string, partition int32) bool {
		t := im.Topic(topic)
		return t != nil && partition >= 0 && int(partition) < len(t.Partitions)
	}
	serve := func() rpc.Result { return rpc.RespondLater(b.groups.OffsetCommit(r, known, failed)) }
	if commitUsesTopicIDs(r.Version) {
		return commitWithTopicIDs(im, r, serve)
	}
	return serve()
}

// fillErrorOffsetCommit is OffsetCommit's apiOpts.fillError (its answer has no
// message).
func fillErrorOffsetCommit(req kmsg.Request, resp kmsg.Response, code int16, _ error) {
	offsetCommitErrors(resp.(*kmsg.OffsetCommitResponse), req.(*kmsg.OffsetCommitRequest).Topics, code)
}

// offsetCommitErrors answers every partition of topics in out with code.
func offsetCommitErrors(out *kmsg.OffsetCommitResponse, topics []kmsg.OffsetCommitRequestTopic, code int16) {
	for _, t := range topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		out.Topics = append(out.Topics, rt)
	}
}

// authorizeOffsetCommit is OffsetCommit's authorization rule (checkRequest): Read on
// the group (GROUP_AUTHORIZATION_FAILED on every partition), then Read on each topic
// (TOPIC_AUTHORIZATION_FAILED), by name also in v10.
func authorizeOffsetCommit(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.OffsetCommitRequest)
	z := checksOf(b, req)
	groupDenied := !z.groupOK(auth.OpRead, r.Group)
	var denied []kmsg.OffsetCommitRequestTopic
	if groupDenied {
		denied, r.Topics = r.Topics, nil
	} else {
		// v10: by the names of the ids; an unknown id is the handler's UNKNOWN_TOPIC_ID.
		resolveCommitTopicIDs(b.Image(), r)
		r.Topics, denied = split(r.Topics, func(t kmsg.OffsetCommitRequestTopic) bool {
			return unknownCommitTopicID(r.Version, t) || z.topicOK(auth.OpRead, t.Topic)
		})
	}
	add := func(resp kmsg.Response) {
		code := codeTopicAuthz
		if groupDenied {
			code = codeGroupAuthz
		}
		offsetCommitErrors(resp.(*kmsg.OffsetCommitResponse), denied, code)
	}
	if groupDenied {
		return z.whole(add)
	}
	return mergeIf(len(denied) > 0, add)
}
