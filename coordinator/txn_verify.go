package coordinator

// KIP-890 part 1, the partition leader's side: before the first transactional batch of
// a producer's transaction is appended to a partition (a Produce, or a TxnOffsetCommit
// on __consumer_offsets), the leader asks the transactional id's coordinator (in
// process, or AddPartitionsToTxn v5 with VerifyOnly through VerifyNet) whether the
// partition is in the producer's ongoing transaction. The partition hands out a guard
// first (replication.TxnVerification) and appends only with a guard it still holds, so
// a marker written meanwhile voids the answer; once the transaction has a batch in the
// partition, its later batches need no round trip. The caller waits for the answer on
// the connection's reader, as Kafka mutes the connection: the client's batches stay in
// order. The coordinator's answers become produce codes as in Kafka's
// AddPartitionsToTxnManager (ProduceVerifyCode): PRODUCER_FENCED is
// INVALID_PRODUCER_EPOCH, TRANSACTION_ABORTABLE stays for produce v11+ and is
// INVALID_TXN_STATE before, and a coordinator that cannot answer now (NOT_COORDINATOR,
// COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS, a
// network error or timeout) is NOT_ENOUGH_REPLICAS, which producers retry.

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

// VerifyNet is what a verification needs of the cluster; the broker implements it.
type VerifyNet interface {
	// TxnCoordinatorOf returns the leader of transactional id's __transaction_state
	// partition: -1 when there is none now or no such topic yet.
	TxnCoordinatorOf(transactionalID string) int32
	// AddPartitionsToTxn sends req to broker leader (another broker) and returns its
	// response.
	AddPartitionsToTxn(ctx context.Context, leader int32, req *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error)
}

// VerifierConfig configures a Verifier.
type VerifierConfig struct {
	// Self is this broker's id: a coordinator here is asked in process (Local).
	Self int32
	// Local is this broker's transaction coordinator.
	Local *TxnCoordinator
	// Net reaches the other brokers' coordinators.
	Net VerifyNet
	// Stop ends every wait when closed (the broker stops).
	Stop <-chan struct{}
	// TransactionVersion returns the finalized transaction.version (nil: 0). From 2
	// a Produce v12 adds its partitions to the transaction (txn_add.go).
	TransactionVersion func() int16
}

// Verifier asks transaction coordinators whether partitions are in producers' ongoing
// transactions. Safe for concurrent use.
type Verifier struct {
	cfg VerifierConfig
}

// NewVerifier returns a Verifier.
func NewVerifier(cfg VerifierConfig) *Verifier { return &Verifier{cfg: cfg} }

// ProduceVerification is the outcome of verifying one partition of a produce: the
// guard to append with (nil when none was needed) or the code refusing the batch.
type ProduceVerification struct {
	Guard *replication.TxnVerification
	Code  int16
	// Off appends without the check (transaction.partition.verification.enable false).
	Off bool
}

// VerifyProduce verifies the transactional batches of r that start a transaction in
// their partition (leader returns the partition led here, nil when none), one
// coordinator call per producer, and returns the outcome by partition; partitions that
// need nothing are absent.
func (v *Verifier) VerifyProduce(ctx context.Context, r *kmsg.ProduceRequest, leader func(topic string, partition int32) *replication.Partition) map[txn.TopicPartition]ProduceVerification {
	if r.TransactionID == nil || *r.TransactionID == "" {
		return nil // the append refuses transactional batches without a guard
	}
	type producer struct {
		id    int64
		epoch int16
	}
	var out map[txn.TopicPartition]ProduceVerification
	pending := map[producer][]txn.TopicPartition{}
	nowMs := time.Now().UnixMilli()
	for _, rt := range r.Topics {
		for _, rp := range rt.Partitions {
			h, err := segment.ParseBatchHeader(rp.Records)
			if err != nil || !h.Transactional() || h.Control() || h.ProducerID < 0 {
				continue
			}
			part := leader(rt.Topic, rp.Partition)
			if part == nil {
				continue
			}
			guard, err := part.StartTxnVerification(h.ProducerID, h.ProducerEpoch, nowMs)
			if err != nil || guard == nil {
				continue
			}
			tp := txn.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			if out == nil {
				out = map[txn.TopicPartition]ProduceVerification{}
			}
			out[tp] = ProduceVerification{Guard: guard}
			pr := producer{h.ProducerID, h.ProducerEpoch}
			pending[pr] = append(pending[pr], tp)
		}
	}
	add := v.ImplicitAdd(r.Version, 12)
	for pr, tps := range pending {
		var codes []int16
		if add {
			guards := make([]*replication.TxnVerification, len(tps))
			for i, tp := range tps {
				guards[i] = out[tp].Guard
			}
			codes = v.AddUnderGuards(ctx, *r.TransactionID, pr.id, pr.epoch, tps, guards, func(i int) (*replication.TxnVerification, error) {
				part := leader(tps[i].Topic, tps[i].Partition)
				if part == nil {
					return guards[i], nil
				}
				return part.StartTxnVerification(pr.id, pr.epoch, time.Now().UnixMilli())
			})
			for i, tp := range tps {
				out[tp] = ProduceVerification{Guard: guards[i]}
			}
		} else {
			codes = v.Verify(ctx, *r.TransactionID, pr.id, pr.epoch, tps)
		}
		for i, tp := range tps {
			if code := ProduceVerifyCode(codes[i], r.Version); code != 0 {
				out[tp] = ProduceVerification{Code: code}
			}
		}
	}
	return out
}

// Verify asks the coordinator of id whether tps are in the ongoing transaction of
// producer pid at epoch; one coordinator code per partition. CONCURRENT_TRANSACTIONS
// (an add or the previous transaction's completion still being written) is retried
// here a few times, as Kafka 4.0 does (KAFKA-18654), rather than sending the producer
// into its retry backoff.
func (v *Verifier) Verify(ctx context.Context, id string, pid int64, epoch int16, tps []txn.TopicPartition) []int16 {
	return v.retrying(ctx, func() []int16 { return v.ask(ctx, id, pid, epoch, tps, false) })
}

// retrying runs ask again while one of its codes is CONCURRENT_TRANSACTIONS, a few
// times with backoff.
func (v *Verifier) retrying(ctx context.Context, ask func() []int16) []int16 {
	codes := ask()
	for wait := verifyRetryBackoff; wait <= verifyRetryMax && slices.Contains(codes, kerr.ConcurrentTransactions.Code); wait *= 2 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		case <-v.cfg.Stop:
		}
		codes = ask()
	}
	return codes
}

// ProduceVerifyCode turns a coordinator's verification code into the produce answer.
func ProduceVerifyCode(code, produceVersion int16) int16 {
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

// ask is one round of Verify.
func (v *Verifier) ask(ctx context.Context, id string, pid int64, epoch int16, tps []txn.TopicPartition, add bool) []int16 {
	codes := make([]int16, len(tps))
	all := func(code int16) []int16 {
		for i := range codes {
			codes[i] = code
		}
		return codes
	}
	ctx, cancel := context.WithTimeout(ctx, txnVerifyTimeout)
	defer cancel()
	go func() { // the broker's stop ends the wait too
		select {
		case <-v.cfg.Stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	leader := v.cfg.Net.TxnCoordinatorOf(id)
	switch {
	case leader < 0:
		return all(kerr.CoordinatorNotAvailable.Code)
	case leader == v.cfg.Self && add:
		return v.addLocal(ctx, id, pid, epoch, tps)
	case leader == v.cfg.Self:
		return v.askLocal(ctx, id, pid, epoch, tps)
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 5
	rt := kmsg.NewAddPartitionsToTxnRequestTransaction()
	rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, rt.VerifyOnly = id, pid, epoch, !add
	for topic, partitions := range topicRuns(tps) {
		rtt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		rtt.Topic, rtt.Partitions = topic, partitions
		rt.Topics = append(rt.Topics, rtt)
	}
	req.Transactions = append(req.Transactions, rt)
	resp, err := v.cfg.Net.AddPartitionsToTxn(ctx, leader, req)
	if err != nil {
		return all(kerr.NetworkException.Code)
	}
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

// askLocal asks this broker's own coordinator.
func (v *Verifier) askLocal(ctx context.Context, id string, pid int64, epoch int16, tps []txn.TopicPartition) []int16 {
	ch := make(chan []int16, 1)
	v.cfg.Local.Submit(id, func(_ time.Time, s *txn.Shard) txn.Effects {
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
		return slices.Repeat([]int16{kerr.RequestTimedOut.Code}, len(tps))
	}
}
