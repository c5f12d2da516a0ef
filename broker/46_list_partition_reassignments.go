package broker

// ListPartitionReassignments (key 46), v0: the partitions being reassigned (all, or
// those named) with their replicas (OAR ∪ RAR), adding and removing replicas, answered
// from this broker's caught-up image (the reassignment state lives only there). A
// named partition that is not being reassigned is left out, as in Kafka; an unknown
// topic or partition is UNKNOWN_TOPIC_OR_PARTITION for the whole request.

import (
	"context"
	"slices"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.ListPartitionReassignments, 0, 0, (*Broker).handleListPartitionReassignments, apiOpts{
		authorize: clusterOnlyCode(auth.OpDescribe),
		fillError: fillErrorListPartitionReassignments,
	})
}

func (b *Broker) handleListPartitionReassignments(_ context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.ListPartitionReassignmentsRequest)
	return rpc.Respond(listPartitionReassignments(b.Image(), r))
}

func listPartitionReassignments(im *metadata.Image, r *kmsg.ListPartitionReassignmentsRequest) *kmsg.ListPartitionReassignmentsResponse {
	resp := r.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	add := func(t *metadata.Topic, ids []int32) {
		rt := kmsg.NewListPartitionReassignmentsResponseTopic()
		rt.Topic = t.Name
		for _, p := range t.Partitions {
			if (ids != nil && !slices.Contains(ids, p.ID)) || !p.Reassigning() {
				continue
			}
			out := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			out.Partition = p.ID
			out.Replicas, out.AddingReplicas, out.RemovingReplicas = slices.Clone(p.Replicas), orNone(p.Adding), orNone(p.Removing)
			rt.Partitions = append(rt.Partitions, out)
		}
		if len(rt.Partitions) > 0 {
			resp.Topics = append(resp.Topics, rt)
		}
	}
	if r.Topics == nil {
		for _, name := range im.TopicNames() {
			add(im.Topics[name], nil)
		}
		return resp
	}
	for _, rt := range r.Topics {
		t := im.Topic(rt.Topic)
		if t == nil {
			resp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			return resp
		}
		for _, id := range rt.Partitions {
			if id < 0 || int(id) >= len(t.Partitions) {
				resp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				resp.Topics = nil
				return resp
			}
		}
		add(t, rt.Partitions)
	}
	return resp
}

// orNone returns s, or an empty list (the field is not nullable).
func orNone(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return slices.Clone(s)
}

// fillErrorListPartitionReassignments is ListPartitionReassignments's apiOpts.fillError.
func fillErrorListPartitionReassignments(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	out := resp.(*kmsg.ListPartitionReassignmentsResponse)
	out.ErrorCode, out.ErrorMessage = code, errorMessage(cause)
}
