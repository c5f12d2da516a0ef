package broker

// DeleteTopics (key 20), v1-6. v6 may name topics by id. Unknown topics get
// UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID by id); delete.topic.enable=false gives
// TOPIC_DELETION_DISABLED; a request naming more than 10,000 topics is refused whole
// with POLICY_VIOLATION (controller/limits.go). Every replica stops and its data is removed from disk.

import (
	"context"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/controller"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.DeleteTopics, 1, 6, (*Broker).respondFromController, apiOpts{
		authorize:  authorizeDeleteTopics,
		controller: onController((*Broker).deleteTopics),
		fillError:  fillErrorDeleteTopics,
		isNotController: func(resp kmsg.Response) bool {
			return allNotController(resp.(*kmsg.DeleteTopicsResponse).Topics, func(t kmsg.DeleteTopicsResponseTopic) int16 { return t.ErrorCode })
		},
		adminChange: true,
		ownTimeout:  true,
	})
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
	if len(requests) > controller.MaxResourcesPerRequest {
		fillErrorDeleteTopics(r, resp, kerr.PolicyViolation.Code, controller.TooManyResources(len(requests)))
		return resp
	}
	timeout := max(time.Duration(r.TimeoutMillis)*time.Millisecond, time.Second)
	for _, t := range requests {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		cctx, cancel := b.waitTimeout(ctx, timeout)
		after, err := b.ctrl.DeleteTopic(cctx, controller.TopicRef{Name: t.Topic, ID: t.TopicID})
		if err == nil {
			b.partitions.waitReconciled(cctx, after.Offset)
		}
		cancel()
		if err != nil {
			rt.ErrorCode = b.errorCodeLogged(err, "delete topics")
			rt.ErrorMessage = errorMessage(err)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// authorizeDeleteTopics is DeleteTopics's authorization rule (checkRequest).
func authorizeDeleteTopics(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.DeleteTopicsRequest)
	z := checksOf(b, req)
	im := b.Image()
	ok := func(name *string, id [16]byte) bool {
		n := ""
		switch {
		case name != nil:
			n = *name
		case im.TopicByID(metadata.Uuid(id)) != nil:
			n = im.TopicByID(metadata.Uuid(id)).Name
		default:
			return true // unknown id: the handler's answer
		}
		return z.topicOK(auth.OpDelete, n)
	}
	var deniedNames []string
	var deniedTopics []kmsg.DeleteTopicsRequestTopic
	r.TopicNames, deniedNames = split(r.TopicNames, func(n string) bool { return ok(&n, [16]byte{}) })
	r.Topics, deniedTopics = split(r.Topics, func(t kmsg.DeleteTopicsRequestTopic) bool { return ok(t.Topic, t.TopicID) })
	for _, n := range deniedNames { // answered after the denied topics, without a message
		deniedTopics = append(deniedTopics, kmsg.DeleteTopicsRequestTopic{Topic: kmsg.StringPtr(n)})
	}
	return mergeErrors(len(deniedTopics) > 0, &kmsg.DeleteTopicsRequest{Topics: deniedTopics}, codeTopicAuthz, nil)
}

// fillErrorDeleteTopics is DeleteTopics's apiOpts.fillError.
func fillErrorDeleteTopics(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	r := resp.(*kmsg.DeleteTopicsResponse)
	dr := req.(*kmsg.DeleteTopicsRequest)
	for _, name := range dr.TopicNames {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.ErrorCode, rt.ErrorMessage = kmsg.StringPtr(name), code, errorMessage(cause)
		r.Topics = append(r.Topics, rt)
	}
	for _, t := range dr.Topics {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID, rt.ErrorCode, rt.ErrorMessage = t.Topic, t.TopicID, code, errorMessage(cause)
		r.Topics = append(r.Topics, rt)
	}
}
