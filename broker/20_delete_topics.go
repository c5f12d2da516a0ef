package broker

// DeleteTopics (key 20), v1-6. v6 may name topics by id. Unknown topics get
// UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID by id); delete.topic.enable=false gives
// TOPIC_DELETION_DISABLED; a request naming more than 10,000 topics is refused whole
// with POLICY_VIOLATION (limits.go). Every replica stops and its data is removed from disk.

import (
	"context"
	"fmt"
	"time"

	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(kmsg.DeleteTopics, 1, 6, (*Broker).handleDeleteTopics) }

func (b *Broker) handleDeleteTopics(ctx context.Context, req *rpc.Request) rpc.Result {
	return b.respondFromController(ctx, req)
}

// deleteTopics runs on the controller.
func (b *Broker) deleteTopics(ctx context.Context, r *kmsg.DeleteTopicsRequest) *kmsg.DeleteTopicsResponse {
	resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
	requests := r.Topics
	if r.Version < 6 {
		requests = nil
		for _, name := range r.TopicNames {
			n := name
			requests = append(requests, kmsg.DeleteTopicsRequestTopic{Topic: &n})
		}
	}
	if len(requests) > maxResourcesPerRequest {
		err := tooManyResources(len(requests))
		for _, t := range requests {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			rt.ErrorCode, rt.ErrorMessage = kerr.PolicyViolation.Code, errorMessage(err)
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	timeout := max(time.Duration(r.TimeoutMillis)*time.Millisecond, time.Second)
	for _, t := range requests {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		err := b.deleteTopic(ctx, t, timeout)
		if err != nil {
			rt.ErrorCode = b.errorCodeLogged(err, "delete topics")
			rt.ErrorMessage = errorMessage(err)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (b *Broker) deleteTopic(ctx context.Context, t kmsg.DeleteTopicsRequestTopic, timeout time.Duration) error {
	if !b.cfg.boolValue("delete.topic.enable") {
		return fmt.Errorf("%w (delete.topic.enable=false)", ErrTopicDeletionDisabled)
	}
	cctx, cancel := b.waitTimeout(ctx, timeout)
	defer cancel()
	after, err := b.controllerDo(cctx, func(im *metadata.Image) ([]metadata.Record, error) {
		var topic *metadata.Topic
		if t.Topic != nil {
			if topic = im.Topic(*t.Topic); topic == nil {
				return nil, fmt.Errorf("%w: %s", metadata.ErrUnknownTopic, *t.Topic)
			}
		} else if topic = im.TopicByID(t.TopicID); topic == nil {
			return nil, fmt.Errorf("%w: %s", metadata.ErrUnknownTopicID, metadata.Uuid(t.TopicID))
		}
		if isInternalTopic(topic.Name) {
			return nil, internalTopicError("delete", topic.Name)
		}
		return []metadata.Record{metadata.RemoveTopicRecord{TopicID: topic.ID}}, nil
	})
	if err != nil {
		return err
	}
	b.partitions.waitReconciled(cctx, after.Offset)
	return nil
}
