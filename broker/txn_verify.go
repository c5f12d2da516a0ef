package broker

// KIP-890 part 1 on the produce path: before the first transactional batch of a
// producer's transaction is appended to a partition, its leader asks the transactional
// id's coordinator (in process, or AddPartitionsToTxn v5 with VerifyOnly) whether the
// partition is in the producer's ongoing transaction. The partition hands out a guard
// first (replication.TxnVerification) and appends only with a guard it still holds, so
// a marker written meanwhile voids the answer; once the transaction has a batch in the
// partition, its later batches need no round trip. The handler waits for the answer on
// the connection's reader, as Kafka mutes the connection: the client's batches stay in
// order. The coordinator's answers become produce codes as in Kafka's
// AddPartitionsToTxnManager: PRODUCER_FENCED is INVALID_PRODUCER_EPOCH,
// TRANSACTION_ABORTABLE stays for produce v11+ and is INVALID_TXN_STATE before, and a
// coordinator that cannot answer now (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
// COORDINATOR_LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS, a network error or timeout) is
// NOT_ENOUGH_REPLICAS, which producers retry. transaction.partition.verification.enable
// false turns all of it off (produce appends as before KIP-890).

import (
	"context"
	"slices"
	"time"

	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/segment"
	"github.com/petrel-broker/petrel/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnVerifyTimeout bounds one verification round trip.
const txnVerifyTimeout = 10 * time.Second

// verifyRetryBackoff and verifyRetryMax bound the retries of a verification answered
// CONCURRENT_TRANSACTIONS: 5, 10, 20, 40, 80 ms (Kafka's
// add.partitions.to.txn.retry.backoff.ms 20 and its max 100 ms, in the same spirit).
const (
	verifyRetryBackoff = 5 * time.Millisecond
	verifyRetryMax     = 80 * time.Millisecond
)

// produceVerification is the outcome of verifying one partition of a produce: the
// guard to append with (nil when none was needed) or the code refusing the batch.
type produceVerification struct {
	guard *replication.TxnVerification
	code  int16
	// off appends without the check (transaction.partition.verification.enable false).
	off bool
}

// verifyProduce verifies the transactional batches of r that start a transaction in
// their partition, one coordinator call per producer, and returns the outcome by
// partition; partitions that need nothing are absent.
func (b *Broker) verifyProduce(ctx context.Context, r *kmsg.ProduceRequest) map[txn.TopicPartition]produceVerification {
	if !b.dynamicBrokerBool("transaction.partition.verification.enable") {
		return nil
	}
	if r.TransactionID == nil || *r.TransactionID == "" {
		return nil // the append refuses transactional batches without a guard
	}
	type producer struct {
		id    int64
		epoch int16
	}
	var out map[txn.TopicPartition]produceVerification
	pending := map[producer][]txn.TopicPartition{}
	nowMs := time.Now().UnixMilli()
	for _, rt := range r.Topics {
		for _, rp := range rt.Partitions {
			h, err := segment.ParseBatchHeader(rp.Records)
			if err != nil || !h.Transactional() || h.Control() || h.ProducerID < 0 {
				continue
			}
			part := b.partitions.get(rt.Topic, rp.Partition)
			if part == nil {
				continue
			}
			guard, err := part.StartTxnVerification(h.ProducerID, h.ProducerEpoch, nowMs)
			if err != nil || guard == nil {
				continue
			}
			tp := txn.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			if out == nil {
				out = map[txn.TopicPartition]produceVerification{}
			}
			out[tp] = produceVerification{guard: guard}
			pr := producer{h.ProducerID, h.ProducerEpoch}
			pending[pr] = append(pending[pr], tp)
		}
	}
	for pr, tps := range pending {
		codes := b.verifyTxnPartitions(ctx, *r.TransactionID, pr.id, pr.epoch, tps)
		// CONCURRENT_TRANSACTIONS (an add or the previous transaction's completion still
		// being written) is retried here a few times, as Kafka 4.0 does
		// (KAFKA-18654), rather than sending the producer into its retry backoff.
		for wait := verifyRetryBackoff; wait <= verifyRetryMax && slices.Contains(codes, kerr.ConcurrentTransactions.Code); wait *= 2 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
			case <-b.stop:
			}
			codes = b.verifyTxnPartitions(ctx, *r.TransactionID, pr.id, pr.epoch, tps)
		}
		for i, tp := range tps {
			if code := produceVerifyCode(codes[i], r.Version); code != 0 {
				out[tp] = produceVerification{code: code}
			}
		}
	}
	return out
}

// produceVerifyCode turns a coordinator's verification code into the produce answer.
func produceVerifyCode(code, produceVersion int16) int16 {
	switch code {
	case kerr.ProducerFenced.Code:
		return kerr.InvalidProducerEpoch.Code
	case kerr.TransactionAbortable.Code:
		if produceVersion < 11 {
			return kerr.InvalidTxnState.Code
		}
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code,
		kerr.ConcurrentTransactions.Code, kerr.RequestTimedOut.Code, kerr.NetworkException.Code:
		return kerr.NotEnoughReplicas.Code
	}
	return code
}

// verifyTxnPartitions asks the coordinator of id whether tps are in the ongoing
// transaction of producer pid at epoch; one coordinator code per partition.
func (b *Broker) verifyTxnPartitions(ctx context.Context, id string, pid int64, epoch int16, tps []txn.TopicPartition) []int16 {
	codes := make([]int16, len(tps))
	all := func(code int16) []int16 {
		for i := range codes {
			codes[i] = code
		}
		return codes
	}
	ctx, cancel := b.waitTimeout(ctx, txnVerifyTimeout)
	defer cancel()
	im := b.Image()
	t := im.Topic(transactionStateTopic)
	if t == nil || len(t.Partitions) == 0 {
		return all(kerr.CoordinatorNotAvailable.Code)
	}
	leader := t.Partitions[txn.PartitionFor(id, int32(len(t.Partitions)))].Leader
	switch {
	case leader < 0:
		return all(kerr.CoordinatorNotAvailable.Code)
	case leader == b.cfg.NodeID:
		ch := make(chan []int16, 1)
		b.txns.Submit(id, func(_ time.Time, s *txn.Shard) txn.Effects {
			code, per := s.VerifyPartitions(id, pid, epoch, tps)
			if code != 0 {
				per = slices.Repeat([]int16{code}, len(tps))
			}
			select {
			case ch <- per:
			default:
			}
			return txn.Effects{}
		}, func(code int16) {
			select {
			case ch <- slices.Repeat([]int16{code}, len(tps)):
			default:
			}
		})
		select {
		case got := <-ch:
			return got
		case <-ctx.Done():
			return all(kerr.RequestTimedOut.Code)
		}
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 5
	rt := kmsg.NewAddPartitionsToTxnRequestTransaction()
	rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, rt.VerifyOnly = id, pid, epoch, true
	for _, tp := range tps {
		if n := len(rt.Topics); n > 0 && rt.Topics[n-1].Topic == tp.Topic {
			rt.Topics[n-1].Partitions = append(rt.Topics[n-1].Partitions, tp.Partition)
			continue
		}
		rtt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		rtt.Topic, rtt.Partitions = tp.Topic, []int32{tp.Partition}
		rt.Topics = append(rt.Topics, rtt)
	}
	req.Transactions = append(req.Transactions, rt)
	raw, err := b.peers.do(ctx, leader, req)
	if err != nil {
		return all(kerr.NetworkException.Code)
	}
	resp := raw.(*kmsg.AddPartitionsToTxnResponse)
	if resp.ErrorCode != 0 {
		return all(resp.ErrorCode)
	}
	// Partitions missing from the answer stay unverified.
	all(kerr.InvalidTxnState.Code)
	for _, tr := range resp.Transactions {
		if tr.TransactionalID != id {
			continue
		}
		for _, rtt := range tr.Topics {
			for _, rp := range rtt.Partitions {
				for i, tp := range tps {
					if tp.Topic == rtt.Topic && tp.Partition == rp.Partition {
						codes[i] = rp.ErrorCode
					}
				}
			}
		}
	}
	return codes
}
