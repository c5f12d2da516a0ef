package broker

// AddPartitionsToTxn (key 24), v0-5: v0-3 are the client versions, v4+ the batched form
// (add_partitions_batched.go) whose VerifyOnly transactions are KIP-890's question of a
// partition leader. The transactional id's coordinator adds
// the partitions to the producer's transaction (txn.Shard.AddPartitions), starting one
// when none is open. A partition whose topic does not exist is
// UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED, nothing written,
// as in Kafka. Refusals: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
// INVALID_PRODUCER_ID_MAPPING (unknown id or another producer id), PRODUCER_FENCED
// (another epoch; INVALID_PRODUCER_EPOCH before v2), CONCURRENT_TRANSACTIONS (a
// transition or the previous transaction's markers are being written).

import (
	"context"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/petrel-broker/petrel/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.AddPartitionsToTxn, 0, 5, (*Broker).handleAddPartitionsToTxn, apiOpts{
		authorize: authorizeAddPartitionsToTxn,
	})
}

func (b *Broker) handleAddPartitionsToTxn(ctx context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.AddPartitionsToTxnRequest)
	if r.Version >= 4 {
		return b.handleAddPartitionsToTxnBatched(r)
	}
	build := func(code func(topic string, partition int32) int16) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, fencedForVersion(code(t.Topic, p), r.Version, 2)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	all := func(code int16) kmsg.Response { return build(func(string, int32) int16 { return code }) }
	im := b.Image()
	var tps []txn.TopicPartition
	unknown := false
	for _, t := range r.Topics {
		topic := im.Topic(t.Topic)
		for _, p := range t.Partitions {
			if topic == nil || p < 0 || int(p) >= len(topic.Partitions) {
				unknown = true
			}
			tps = append(tps, txn.TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	if r.TransactionalID == "" {
		return rpc.Respond(all(kerr.InvalidRequest.Code))
	}
	if unknown {
		return rpc.Respond(build(func(topic string, p int32) int16 {
			if t := im.Topic(topic); t == nil || p < 0 || int(p) >= len(t.Partitions) {
				return kerr.UnknownTopicOrPartition.Code
			}
			return kerr.OperationNotAttempted.Code
		}))
	}
	ch := make(chan kmsg.Response, 1)
	b.txns.AddPartitions(r.TransactionalID, r.ProducerID, r.ProducerEpoch, tps, func(code int16) { ch <- all(code) })
	return rpc.RespondLater(ch)
}

// fencedForVersion answers PRODUCER_FENCED as INVALID_PRODUCER_EPOCH to versions
// before since, which predate it (KIP-588), as Kafka does.
func fencedForVersion(code int16, version, since int16) int16 {
	if code == kerr.ProducerFenced.Code && version < since {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}

// authorizeAddPartitionsToTxn is AddPartitionsToTxn's authorization rule
// (checkRequest).
func authorizeAddPartitionsToTxn(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.AddPartitionsToTxnRequest)
	z := checksOf(b, req)
	if r.Version >= 4 {
		if !z.clusterOK(auth.OpClusterAction) {
			return z.whole(func(resp kmsg.Response) { resp.(*kmsg.AddPartitionsToTxnResponse).ErrorCode = codeClusterAuthz })
		}
		return authzDecision{}
	}
	txnDenied := !z.txnOK(r.TransactionalID)
	anyDenied := txnDenied
	for _, t := range r.Topics {
		anyDenied = anyDenied || !z.topicOK(auth.OpWrite, t.Topic)
	}
	if !anyDenied {
		return authzDecision{}
	}
	return z.whole(func(resp kmsg.Response) {
		out := resp.(*kmsg.AddPartitionsToTxnResponse)
		for _, t := range r.Topics {
			code := errorCode(ErrOperationNotAttempted)
			switch {
			case txnDenied:
				code = codeTxnAuthz
			case !z.topicOK(auth.OpWrite, t.Topic):
				code = codeTopicAuthz
			}
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	})
}
