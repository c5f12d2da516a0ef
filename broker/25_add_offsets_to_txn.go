package broker

// AddOffsetsToTxn (key 25), v0-4 (v4 is v3's body; TV2 clients skip it, TxnOffsetCommit
// v5 adding the partition implicitly): adds the group's __consumer_offsets partition to the
// producer's transaction, so that its TxnOffsetCommit becomes part of it (the markers
// reach that partition too). Refusals as AddPartitionsToTxn's.
//
// As in Kafka (KafkaApis.handleAddOffsetsToTxnRequest), the partition is the group
// coordinator's partitionFor(group), whether or not __consumer_offsets exists yet:
// abs(javaStringHashCode(group)) % the topic's partition count, or
// offsets.topic.num.partitions while there is no topic. A missing topic is created
// first, as FindCoordinator creates it (ensureOffsetsTopic, bounded by its 5 s wait),
// so that the partition is the one the created topic routes the group to; when it
// cannot be created yet (fewer unfenced brokers than its replication factor) the
// partition comes from offsets.topic.num.partitions and the request is answered all
// the same (the group's FindCoordinator answers COORDINATOR_NOT_AVAILABLE until the
// topic exists; a marker for a partition that does not exist is skipped).

import (
	"context"
	"sync"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/petrel-broker/petrel/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.AddOffsetsToTxn, 0, 4, (*Broker).handleAddOffsetsToTxn, apiOpts{
		authorize: authorizeAddOffsetsToTxn,
	})
}

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
	ch := make(chan kmsg.Response, 1)
	var once sync.Once
	send := func(code int16) { once.Do(func() { ch <- answer(code) }) }
	add := func(im *metadata.Image) {
		tp := txn.TopicPartition{Topic: offsetsTopic, Partition: b.offsetsPartitionFor(im, r.Group)}
		b.txns.Submit(r.TransactionalID, func(now time.Time, s *txn.Shard) txn.Effects {
			return s.AddPartitions(now, r.TransactionalID, r.ProducerID, r.ProducerEpoch, []txn.TopicPartition{tp}, send)
		}, send)
	}
	if im := b.Image(); im.Topic(offsetsTopic) != nil {
		add(im)
	} else {
		b.goLoop("add offsets to txn", func() { add(b.ensureOffsetsTopic(ctx)) })
	}
	return rpc.RespondLater(ch)
}

// offsetsPartitionFor is the group coordinator's partitionFor(groupID): its partition
// of __consumer_offsets in im, or by offsets.topic.num.partitions while the topic does
// not exist (Kafka's count before the topic is created).
func (b *Broker) offsetsPartitionFor(im *metadata.Image, groupID string) int32 {
	partitions := int32(b.cfg.int64Value("offsets.topic.num.partitions"))
	if t := im.Topic(offsetsTopic); t != nil && len(t.Partitions) > 0 {
		partitions = int32(len(t.Partitions))
	}
	return group.PartitionFor(groupID, partitions)
}

// authorizeAddOffsetsToTxn is AddOffsetsToTxn's authorization rule (checkRequest).
func authorizeAddOffsetsToTxn(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.AddOffsetsToTxnRequest)
	z := checksOf(b, req)
	switch {
	case !z.txnOK(r.TransactionalID):
		return z.whole(func(resp kmsg.Response) { resp.(*kmsg.AddOffsetsToTxnResponse).ErrorCode = codeTxnAuthz })
	case !z.groupOK(auth.OpRead, r.Group):
		return z.whole(func(resp kmsg.Response) { resp.(*kmsg.AddOffsetsToTxnResponse).ErrorCode = codeGroupAuthz })
	}
	return authzDecision{} // nothing refused
}
