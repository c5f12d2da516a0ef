package broker

// DescribeProducers (key 61), v0: the active idempotent producers of each named
// partition, from its leader's producer state (kafka-transactions.sh
// describe-producers, `petrel producers describe`). A partition this broker does not
// lead is answered by noReplicaError (the one rule for NOT_LEADER_OR_FOLLOWER and
// UNKNOWN_TOPIC_OR_PARTITION). Without transactions the coordinator epoch and the
// current transaction's start offset are -1.

import (
	"context"
	"fmt"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.DescribeProducers, 0, 0, (*Broker).handleDescribeProducers, apiOpts{
		authorize: authorizeDescribeProducers,
	})
}

func (b *Broker) handleDescribeProducers(ctx context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.DescribeProducersRequest)
	resp := r.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range r.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		for _, id := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = id
			b.describePartitionProducers(rt.Topic, id, &sp)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return rpc.Respond(resp)
}

func (b *Broker) describePartitionProducers(topic string, id int32, sp *kmsg.DescribeProducersResponseTopicPartition) {
	part := b.partitions.get(topic, id)
	if part == nil {
		sp.ErrorCode, sp.ErrorMessage = b.noReplicaError(topic, id), errorMessage(fmt.Errorf("broker %d does not lead %s-%d", b.cfg.NodeID, topic, id))
		return
	}
	entries, err := part.Producers()
	if err != nil {
		sp.ErrorCode, sp.ErrorMessage = b.errorCodeLogged(err, "describe producers"), errorMessage(err)
		return
	}
	for _, e := range entries {
		ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
		ap.ProducerID, ap.ProducerEpoch = e.ProducerID, int32(e.ProducerEpoch)
		ap.LastSequence, ap.LastTimestamp = e.LastSequence(), e.LastTimestamp
		ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = e.CoordinatorEpoch, -1
		if e.TxnOpen {
			ap.CurrentTxnStartOffset = e.TxnFirstOffset
		}
		sp.ActiveProducers = append(sp.ActiveProducers, ap)
	}
}

// authorizeDescribeProducers is DescribeProducers's authorization rule (checkRequest).
func authorizeDescribeProducers(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.DescribeProducersRequest)
	z := checksOf(b, req)
	var denied []kmsg.DescribeProducersRequestTopic
	r.Topics, denied = split(r.Topics, func(t kmsg.DescribeProducersRequestTopic) bool { return z.topicOK(auth.OpRead, t.Topic) })
	return mergeIf(len(denied) > 0, func(resp kmsg.Response) {
		out := resp.(*kmsg.DescribeProducersResponse)
		for _, t := range denied {
			rt := kmsg.NewDescribeProducersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeProducersResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, codeTopicAuthz
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	})
}
