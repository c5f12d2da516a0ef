package broker

// CreatePartitions (key 37), v0-3. Raises a topic's partition count: new partitions are
// placed by the rule CreateTopics uses (Kafka's rack-aware placement, continuing the
// partition numbering, with the topic's replication factor), or by an explicit
// assignment of one replica list per new partition. A count at or below the current one
// is INVALID_PARTITIONS; an assignment of the wrong length, size, or naming unknown or
// repeated brokers is INVALID_REPLICA_ASSIGNMENT; an unknown topic is
// UNKNOWN_TOPIC_OR_PARTITION; a topic named twice is INVALID_REQUEST. validate_only
// checks without creating. The answer waits until the partitions are committed and this
// broker's new replicas are open (at most 2 s more).

import (
	"context"
	"fmt"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/controller"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.CreatePartitions, 0, 3, (*Broker).respondFromController, apiOpts{
		authorize:  authorizeCreatePartitions,
		controller: onController((*Broker).createPartitions),
		fillError:  fillErrorCreatePartitions,
		isNotController: func(resp kmsg.Response) bool {
			return allNotController(resp.(*kmsg.CreatePartitionsResponse).Topics, func(t kmsg.CreatePartitionsResponseTopic) int16 { return t.ErrorCode })
		},
		adminChange: true,
		ownTimeout:  true,
	})
}

// createPartitions runs on the controller: it decodes each topic, asks the controller
// (controller/partitions.go) and encodes the outcome.
func (b *Broker) createPartitions(ctx context.Context, r *kmsg.CreatePartitionsRequest) *kmsg.CreatePartitionsResponse {
	resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
	timeout := max(time.Duration(r.TimeoutMillis)*time.Millisecond, time.Second)
	seen := map[string]int{}
	for _, t := range r.Topics {
		seen[t.Topic]++
	}
	for _, t := range r.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		var err error
		if seen[t.Topic] > 1 {
			err = fmt.Errorf("%w: topic %q is listed more than once", controller.ErrInvalidRequest, t.Topic)
		} else {
			spec := controller.PartitionsSpec{Topic: t.Topic, Count: t.Count}
			if t.Assignment != nil {
				spec.Assignment = make([][]int32, len(t.Assignment))
				for i, a := range t.Assignment {
					spec.Assignment[i] = a.Replicas
				}
			}
			cctx, cancel := b.waitTimeout(ctx, timeout)
			var im *metadata.Image
			im, err = b.ctrl.CreatePartitions(cctx, spec, r.ValidateOnly)
			if err == nil && !r.ValidateOnly {
				wctx, wcancel := context.WithTimeout(cctx, 2*time.Second)
				b.partitions.waitReconciled(wctx, im.Offset)
				wcancel()
			}
			cancel()
		}
		if err != nil {
			rt.ErrorCode = b.errorCodeLogged(err, "create partitions")
			rt.ErrorMessage = errorMessage(err)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// authorizeCreatePartitions is CreatePartitions's authorization rule (checkRequest).
func authorizeCreatePartitions(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.CreatePartitionsRequest)
	z := checksOf(b, req)
	var denied []kmsg.CreatePartitionsRequestTopic
	r.Topics, denied = split(r.Topics, func(t kmsg.CreatePartitionsRequestTopic) bool { return z.topicOK(auth.OpAlter, t.Topic) })
	return mergeErrors(len(denied) > 0, &kmsg.CreatePartitionsRequest{Topics: denied}, codeTopicAuthz, ErrTopicAuthorizationFailed)
}

// fillErrorCreatePartitions is CreatePartitions's apiOpts.fillError.
func fillErrorCreatePartitions(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	r := resp.(*kmsg.CreatePartitionsResponse)
	for _, t := range req.(*kmsg.CreatePartitionsRequest).Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, code, errorMessage(cause)
		r.Topics = append(r.Topics, rt)
	}
}
