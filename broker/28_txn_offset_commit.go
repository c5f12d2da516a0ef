package broker

// TxnOffsetCommit (key 28), v0-5: a transactional producer's offset commit, sent to the
// group's coordinator after AddOffsetsToTxn (v4 is v3's body). Under transaction.version
// 2, v5 adds the group's partition to the transaction itself (KIP-890 part 2, the
// client skips AddOffsetsToTxn; txn_v2.go). As in Kafka, the offsets are written at
// once to the group's __consumer_offsets partition as one transactional batch of the
// producer (group.Shard.TxnOffsetCommit, the coordinator runtime's Result.Producer),
// and the request is answered once that batch is committed (acks=all, as OffsetCommit).
// They stay pending until the transaction's marker reaches the partition
// (WriteTxnMarkers, through the same runtime), which materialises them (COMMIT) or
// drops them (ABORT); a new coordinator rebuilds the pending offsets from the log.
//
// Before the write, KIP-890 part 1 applies as on the produce path: unless the producer
// already has its transaction open in that partition, the partition hands out a guard
// and the transaction coordinator is asked whether the partition is in the producer's
// ongoing transaction (transaction.partition.verification.enable). Its refusals become
// Kafka's TxnOffsetCommit codes: PRODUCER_FENCED is INVALID_PRODUCER_EPOCH,
// TRANSACTION_ABORTABLE is INVALID_TXN_STATE (v5+ only knows it), and a coordinator
// that cannot answer now is COORDINATOR_NOT_AVAILABLE (retried by clients). A write of
// an epoch older than the partition's is INVALID_PRODUCER_EPOCH.
//
// Partitions of unknown topics are UNKNOWN_TOPIC_OR_PARTITION; INVALID_GROUP_ID for an
// empty group id; NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS when the group's
// partition is not served here.

import (
	"context"
	"sync"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/coordinator"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/petrel-broker/petrel/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.TxnOffsetCommit, 0, 5, (*Broker).handleTxnOffsetCommit, apiOpts{
		authorize: authorizeTxnOffsetCommit,
		fillError: fillErrorTxnOffsetCommit,
	})
}

func (b *Broker) handleTxnOffsetCommit(ctx context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.TxnOffsetCommitRequest)
	failed := func(code int16) kmsg.Response { return errorResponse(r, code, nil) }
	if r.Group == "" {
		return rpc.Respond(failed(kerr.InvalidGroupID.Code))
	}
	im := b.Image()
	for _, t := range r.Topics {
		topic := im.Topic(t.Topic)
		for _, p := range t.Partitions {
			if topic == nil || p.Partition < 0 || int(p.Partition) >= len(topic.Partitions) {
				return rpc.Respond(failed(kerr.UnknownTopicOrPartition.Code))
			}
		}
	}
	partition, ok := b.groups.PartitionFor(r.Group)
	if !ok {
		return rpc.Respond(failed(kerr.NotCoordinator.Code))
	}
	if _, served := b.groups.Loaded()[partition]; !served {
		return rpc.Respond(failed(kerr.NotCoordinator.Code))
	}
	ch := make(chan kmsg.Response, 1)
	var once sync.Once
	send := func(resp kmsg.Response) { once.Do(func() { ch <- resp }) }
	b.goLoop("txn offset commit", func() {
		v, code := b.verifyTxnOffsetCommit(ctx, r, partition)
		if code != 0 {
			send(failed(code))
			return
		}
		b.groups.TxnOffsetCommit(partition, r, v, send, func(code int16) { send(failed(code)) })
	})
	return rpc.RespondLater(ch)
}

// verifyTxnOffsetCommit applies KIP-890 part 1 to r's write on the __consumer_offsets
// partition: the guard to write with, or the code refusing the request.
func (b *Broker) verifyTxnOffsetCommit(ctx context.Context, r *kmsg.TxnOffsetCommitRequest, partition int32) (coordinator.Verification, int16) {
	if !b.dynamicBrokerBool("transaction.partition.verification.enable") && !b.verifier.ImplicitAdd(r.Version, 5) {
		return coordinator.Verification{}, 0
	}
	lp := b.partitions.get(offsetsTopic, partition)
	if lp == nil {
		return coordinator.Verification{}, kerr.NotCoordinator.Code
	}
	guard, err := lp.StartTxnVerification(r.ProducerID, r.ProducerEpoch, time.Now().UnixMilli())
	if err != nil {
		return coordinator.Verification{}, kerr.NotCoordinator.Code
	}
	v := coordinator.Verification{Verify: true, Guard: guard}
	if guard == nil {
		return v, 0 // the transaction is already open in the partition
	}
	tps := []txn.TopicPartition{{Topic: offsetsTopic, Partition: partition}}
	codes, produceVersion := b.verifyOrAddTxnOffsets(ctx, r, tps, &v.Guard, func() (*replication.TxnVerification, error) {
		return lp.StartTxnVerification(r.ProducerID, r.ProducerEpoch, time.Now().UnixMilli())
	})
	code := coordinator.ProduceVerifyCode(codes[0], produceVersion)
	if code == kerr.NotEnoughReplicas.Code {
		code = kerr.CoordinatorNotAvailable.Code // Kafka's group coordinator translation
	}
	return v, code
}

// completeGroupTransaction writes m's marker on a __consumer_offsets partition through
// the group coordinator (coordinator.GroupCoordinator.CompleteTransaction).
func (b *Broker) completeGroupTransaction(partition int32, m kmsg.WriteTxnMarkersRequestMarker) <-chan int16 {
	return b.groups.CompleteTransaction(partition, coordinator.MarkerWrite{ProducerID: m.ProducerID,
		ProducerEpoch: m.ProducerEpoch, Commit: m.Committed, CoordinatorEpoch: m.CoordinatorEpoch,
		TransactionVersion: m.TransactionVersion})
}

// authorizeTxnOffsetCommit is TxnOffsetCommit's authorization rule (checkRequest).
func authorizeTxnOffsetCommit(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.TxnOffsetCommitRequest)
	z := checksOf(b, req)
	code := int16(0)
	switch {
	case !z.txnOK(r.TransactionalID):
		code = codeTxnAuthz
	case !z.groupOK(auth.OpRead, r.Group):
		code = codeGroupAuthz
	}
	var denied []kmsg.TxnOffsetCommitRequestTopic
	if code != 0 {
		denied, r.Topics = r.Topics, nil
	} else {
		code = codeTopicAuthz
		r.Topics, denied = split(r.Topics, func(t kmsg.TxnOffsetCommitRequestTopic) bool { return z.topicOK(auth.OpRead, t.Topic) })
	}
	add := func(resp kmsg.Response) { txnOffsetCommitErrors(resp.(*kmsg.TxnOffsetCommitResponse), denied, code) }
	if code != codeTopicAuthz {
		return z.whole(add)
	}
	return mergeIf(len(denied) > 0, add)
}

// fillErrorTxnOffsetCommit is TxnOffsetCommit's apiOpts.fillError (its answer has no
// message).
func fillErrorTxnOffsetCommit(req kmsg.Request, resp kmsg.Response, code int16, _ error) {
	txnOffsetCommitErrors(resp.(*kmsg.TxnOffsetCommitResponse), req.(*kmsg.TxnOffsetCommitRequest).Topics, code)
}

// txnOffsetCommitErrors answers every partition of topics in out with code.
func txnOffsetCommitErrors(out *kmsg.TxnOffsetCommitResponse, topics []kmsg.TxnOffsetCommitRequestTopic, code int16) {
	for _, t := range topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		out.Topics = append(out.Topics, rt)
	}
}
