package broker

// DescribeTopicPartitions (key 75), v0 (KIP-966): the partitions of the named topics, or
// of every topic the principal may Describe when none is named, each with its eligible
// leader replicas and last known ELR, in topic-name then partition order, paged: at most
// ResponsePartitionLimit partitions (capped at max.request.partition.size.limit, 2000)
// per answer, and NextCursor names the first partition left out (null when none is).
// A request's Cursor starts the page at that topic and partition; with named topics the
// cursor's topic must be one of them (INVALID_REQUEST otherwise, as in Kafka). A named
// topic the principal may not Describe is TOPIC_AUTHORIZATION_FAILED, an unknown one
// UNKNOWN_TOPIC_OR_PARTITION; neither counts towards the limit.

import (
	"context"
	"slices"
	"sort"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	// Authorization is per topic (DESCRIBE), decided by the handler as Kafka's does:
	// unnamed topics are filtered, named ones answered TOPIC_AUTHORIZATION_FAILED.
	registerAPI(kmsg.DescribeTopicPartitions, 0, 0, (*Broker).handleDescribeTopicPartitions, apiOpts{
		authorize: authorizeNothing,
	})
}

func (b *Broker) handleDescribeTopicPartitions(ctx context.Context, req *rpc.Request) rpc.Result {
	return rpc.Respond(b.describeTopicPartitions(req))
}

// describeTopicPartitions answers one DescribeTopicPartitions request from the image.
func (b *Broker) describeTopicPartitions(req *rpc.Request) *kmsg.DescribeTopicPartitionsResponse {
	r := req.Body.(*kmsg.DescribeTopicPartitionsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	im := b.Image()
	checks := b.checks(req)
	named := len(r.Topics) > 0
	var names []string
	if named {
		for _, t := range r.Topics {
			names = append(names, t.Topic)
		}
		sort.Strings(names)
		names = slices.Compact(names)
	} else {
		names = im.TopicNames()
	}
	if named && r.Cursor != nil && !slices.Contains(names, r.Cursor.Topic) {
		for _, name := range names {
			resp.Topics = append(resp.Topics, errorTopic(name, kerr.InvalidRequest.Code))
		}
		return resp
	}
	limit := int(min(max(r.ResponsePartitionLimit, 1), int32(b.cfg.int64Value("max.request.partition.size.limit"))))
	served := 0
	for _, name := range names {
		start := int32(0)
		if r.Cursor != nil {
			if name < r.Cursor.Topic {
				continue
			}
			if name == r.Cursor.Topic {
				start = max(r.Cursor.Partition, 0)
			}
		}
		allowed := checks.Allowed(auth.OpDescribe, auth.ResourceTopic, name)
		t := im.Topic(name)
		switch {
		case !allowed && !named:
			continue
		case !allowed:
			resp.Topics = append(resp.Topics, errorTopic(name, kerr.TopicAuthorizationFailed.Code))
			continue
		case t == nil:
			resp.Topics = append(resp.Topics, errorTopic(name, kerr.UnknownTopicOrPartition.Code))
			continue
		}
		if int(start) >= len(t.Partitions) {
			continue
		}
		if served == limit {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: start}
			break
		}
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		topicName := t.Name
		rt.Topic, rt.TopicID, rt.IsInternal = &topicName, t.ID, isInternalTopic(t.Name)
		rt.AuthorizedOperations = checks.AuthorizedOperations(auth.ResourceTopic, t.Name)
		for _, p := range t.Partitions[start:] {
			if served == limit {
				resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: p.ID}
				break
			}
			rt.Partitions = append(rt.Partitions, describedPartition(im, p))
			served++
		}
		resp.Topics = append(resp.Topics, rt)
		if resp.NextCursor != nil {
			break
		}
	}
	return resp
}

// errorTopic is a DescribeTopicPartitions topic answered with code.
func errorTopic(name string, code int16) kmsg.DescribeTopicPartitionsResponseTopic {
	rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
	rt.Topic, rt.ErrorCode = &name, code
	return rt
}

// describedPartition is one partition of a DescribeTopicPartitions answer.
func describedPartition(im *metadata.Image, p *metadata.Partition) kmsg.DescribeTopicPartitionsResponseTopicPartition {
	rp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
	rp.Partition, rp.LeaderID, rp.LeaderEpoch = p.ID, p.Leader, p.LeaderEpoch
	rp.Replicas = append([]int32{}, p.Replicas...)
	rp.ISR = append([]int32{}, p.ISR...)
	rp.EligibleLeaderReplicas = append([]int32{}, p.ELR...)
	rp.LastKnownELR = append([]int32{}, p.LastKnownELR...)
	rp.OfflineReplicas = unavailableReplicas(im, p.Replicas)
	if p.Leader < 0 {
		rp.ErrorCode = kerr.LeaderNotAvailable.Code
	}
	return rp
}

// unavailableReplicas are the replicas whose broker is unregistered or fenced (never nil).
func unavailableReplicas(im *metadata.Image, replicas []int32) []int32 {
	out := []int32{}
	for _, id := range replicas {
		if br := im.Brokers[id]; br == nil || br.Fenced {
			out = append(out, id)
		}
	}
	return out
}
