package broker

// AddOffsetsToTxn (key 25), v0-3: adds the group's __consumer_offsets partition to the
// producer's transaction, so that its TxnOffsetCommit becomes part of it (the markers
// reach that partition too). Refusals as AddPartitionsToTxn's; the offsets topic
// missing (it cannot be created yet) is COORDINATOR_NOT_AVAILABLE.

import (
	"context"
	"time"

	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/petrel-broker/petrel/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { registerAPI(kmsg.AddOffsetsToTxn, 0, 3, (*Broker).handleAddOffsetsToTxn) }

func (b *Broker) handleAddOffsetsToTxn(ctx context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.AddOffsetsToTxnRequest)
	answer := func(code int16) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		resp.ErrorCode = fencedForVersion(code, r.Version, 2)
		return resp
	}
	if r.TransactionalID == "" || r.Group == "" {
		return rpc.Respond(answer(kerr.InvalidRequest.Code))
	}
	t := b.Image().Topic(offsetsTopic)
	if t == nil || len(t.Partitions) == 0 {
		return rpc.Respond(answer(kerr.CoordinatorNotAvailable.Code))
	}
	tp := txn.TopicPartition{Topic: offsetsTopic, Partition: group.PartitionFor(r.Group, int32(len(t.Partitions)))}
	return b.txns.respond(r.TransactionalID, func(now time.Time, s *txn.Shard, send func(kmsg.Response)) txn.Effects {
		return s.AddPartitions(now, r.TransactionalID, r.ProducerID, r.ProducerEpoch, []txn.TopicPartition{tp},
			func(code int16) { send(answer(code)) })
	}, answer)
}
