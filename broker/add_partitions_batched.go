package broker

// AddPartitionsToTxn v4+ (KIP-890 part 1): a batch of transactions, each answered by its
// transactional id's coordinator. A VerifyOnly transaction asks whether its partitions
// are in the producer's ongoing transaction (txn.Shard.VerifyPartitions) and writes
// nothing: 0 for the partitions in it, TRANSACTION_ABORTABLE for the others
// (INVALID_TXN_STATE to v4, which predates that code), or one refusal for all
// (INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED, CONCURRENT_TRANSACTIONS, NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS). Any other transaction adds its partitions as v3 does:
// a partition leader's implicit add for a Transactions V2 producer (KIP-890 part 2,
// txn.Shard.AddPartitionsImplicit).

import (
	"sync"
	"time"

	"github.com/petrel-broker/petrel/rpc"
	"github.com/petrel-broker/petrel/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleAddPartitionsToTxnBatched(r *kmsg.AddPartitionsToTxnRequest) rpc.Result {
	resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	resp.Transactions = make([]kmsg.AddPartitionsToTxnResponseTransaction, len(r.Transactions))
	tps := make([][]txn.TopicPartition, len(r.Transactions))
	for i, t := range r.Transactions {
		rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rt.TransactionalID = t.TransactionalID
		for _, topic := range t.Topics {
			rtt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			rtt.Topic = topic.Topic
			for _, p := range topic.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition = p
				rtt.Partitions = append(rtt.Partitions, rp)
				tps[i] = append(tps[i], txn.TopicPartition{Topic: topic.Topic, Partition: p})
			}
			rt.Topics = append(rt.Topics, rtt)
		}
		resp.Transactions[i] = rt
	}
	ch := make(chan kmsg.Response, 1)
	if len(r.Transactions) == 0 {
		ch <- resp
		return rpc.RespondLater(ch)
	}
	var mu sync.Mutex
	answered := make([]bool, len(r.Transactions))
	remaining := len(r.Transactions)
	// finish sets transaction i's codes (code(j) for its j-th partition) once.
	finish := func(i int, code func(j int) int16) {
		mu.Lock()
		defer mu.Unlock()
		if answered[i] {
			return
		}
		answered[i] = true
		j := 0
		for ti := range resp.Transactions[i].Topics {
			ps := resp.Transactions[i].Topics[ti].Partitions
			for pi := range ps {
				ps[pi].ErrorCode = code(j)
				j++
			}
		}
		if remaining--; remaining == 0 {
			ch <- resp
		}
	}
	im := b.Image()
	for i, t := range r.Transactions {
		all := func(c int16) { finish(i, func(int) int16 { return c }) }
		if t.TransactionalID == "" {
			all(kerr.InvalidRequest.Code)
			continue
		}
		if t.VerifyOnly {
			b.txns.Submit(t.TransactionalID, func(_ time.Time, s *txn.Shard) txn.Effects {
				code, per := s.VerifyPartitions(t.TransactionalID, t.ProducerID, t.ProducerEpoch, tps[i])
				finish(i, func(j int) int16 {
					if code != 0 {
						return code
					}
					if per[j] == kerr.TransactionAbortable.Code && r.Version < 5 {
						return kerr.InvalidTxnState.Code
					}
					return per[j]
				})
				return txn.Effects{}
			}, all)
			continue
		}
		unknown := false
		for _, tp := range tps[i] {
			if topic := im.Topic(tp.Topic); topic == nil || tp.Partition < 0 || int(tp.Partition) >= len(topic.Partitions) {
				unknown = true
			}
		}
		if unknown {
			finish(i, func(j int) int16 {
				tp := tps[i][j]
				if topic := im.Topic(tp.Topic); topic == nil || tp.Partition < 0 || int(tp.Partition) >= len(topic.Partitions) {
					return kerr.UnknownTopicOrPartition.Code
				}
				return kerr.OperationNotAttempted.Code
			})
			continue
		}
		b.txns.AddPartitionsImplicit(t.TransactionalID, t.ProducerID, t.ProducerEpoch, tps[i], all)
	}
	return rpc.RespondLater(ch)
}
