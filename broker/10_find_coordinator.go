package broker

// FindCoordinator (key 10), v0-5; v4+ batches keys (KIP-699). Key type 0 (group) is
// answered with the leader of the group's __consumer_offsets partition,
// abs(javaStringHashCode(group)) % partitions. The topic is created on first need;
// while it cannot be (fewer unfenced brokers than offsets.topic.replication.factor) or
// the partition has no leader, the answer is COORDINATOR_NOT_AVAILABLE, as in Kafka.
// Key type 1 (transaction) is COORDINATOR_NOT_AVAILABLE until transactions exist; any
// other key type is INVALID_REQUEST.

import (
	"context"

	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(kmsg.FindCoordinator, 0, 5, (*Broker).handleFindCoordinator) }

func (b *Broker) handleFindCoordinator(ctx context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.FindCoordinatorRequest)
	keys := r.CoordinatorKeys
	if r.Version < 4 {
		keys = []string{r.CoordinatorKey}
	}
	answer := func(im *metadata.Image) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
		for _, key := range keys {
			resp.Coordinators = append(resp.Coordinators, b.findCoordinator(im, r.CoordinatorType, key))
		}
		if r.Version < 4 {
			c := resp.Coordinators[0]
			resp.Coordinators = nil
			resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port = c.ErrorCode, c.ErrorMessage, c.NodeID, c.Host, c.Port
		}
		return resp
	}
	im := b.Image()
	if im.Topic(offsetsTopic) != nil || r.CoordinatorType != 0 {
		return rpc.Respond(answer(im))
	}
	ch := make(chan kmsg.Response, 1)
	b.goLoop("find coordinator", func() { ch <- answer(b.ensureOffsetsTopic(ctx)) })
	return rpc.RespondLater(ch)
}

func (b *Broker) findCoordinator(im *metadata.Image, keyType int8, key string) kmsg.FindCoordinatorResponseCoordinator {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Port = key, -1, -1
	fail := func(code int16, msg string) kmsg.FindCoordinatorResponseCoordinator {
		c.ErrorCode, c.ErrorMessage = code, kmsg.StringPtr(msg)
		return c
	}
	switch keyType {
	case 0:
	case 1:
		return fail(kerr.CoordinatorNotAvailable.Code, "transactions are not supported yet")
	default:
		return fail(kerr.InvalidRequest.Code, "unknown coordinator key type")
	}
	t := im.Topic(offsetsTopic)
	if t == nil || len(t.Partitions) == 0 {
		return fail(kerr.CoordinatorNotAvailable.Code, "the "+offsetsTopic+" topic does not exist yet")
	}
	p := t.Partitions[group.PartitionFor(key, int32(len(t.Partitions)))]
	br := im.Brokers[p.Leader]
	if p.Leader < 0 || br == nil || br.Fenced || len(br.Listeners) == 0 {
		return fail(kerr.CoordinatorNotAvailable.Code, "the group's "+offsetsTopic+" partition has no leader")
	}
	c.NodeID, c.Host, c.Port = p.Leader, br.Listeners[0].Host, br.Listeners[0].Port
	return c
}
