package broker

// Transactions V2 (KIP-890 part 2) on the broker: which requests take the TV2 path.
// The finalized transaction.version (metadata.FeatureTransactionVersion) switches it
// on; below 2 every request keeps the TV1 rules, whatever its version. At 2 and above:
//   - EndTxn v5 ends the transaction with the epoch bumped and answers the producer id
//     and epoch to use next (txn.Shard.EndTransactionV2); EndTxn v0-4 keep TV1's rules;
//   - a transactional Produce v12 has the partition leader add the partition to the
//     transaction (coordinator.Verifier.Add) where v11 only verifies it;
//   - TxnOffsetCommit v5 adds the group's __consumer_offsets partition the same way
//     (28_txn_offset_commit.go), so TV2 clients skip AddOffsetsToTxn.

import (
	"context"
	"time"

	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/petrel-broker/petrel/txn"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// transactionVersion returns the cluster's finalized transaction.version.
func (b *Broker) transactionVersion() int16 {
	return b.Image().FeatureLevel(metadata.FeatureTransactionVersion)
}

// handleEndTxnV2 answers an EndTxn v5 under transaction.version 2.
func (b *Broker) handleEndTxnV2(r *kmsg.EndTxnRequest) rpc.Result {
	answer := func(code int16, pid int64, epoch int16) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = code, pid, epoch
		return resp
	}
	return rpc.RespondLater(b.txns.Respond(r.TransactionalID, func(now time.Time, s *txn.Shard, send func(kmsg.Response)) txn.Effects {
		return s.EndTransactionV2(now, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit, b.producerIDs.TryGenerate,
			func(code int16, pid int64, epoch int16) { send(answer(code, pid, epoch)) })
	}, func(code int16) kmsg.Response { return answer(code, -1, -1) }))
}

// verifyOrAddTxnOffsets asks r's transaction coordinator about the group's
// __consumer_offsets partition tps, whose guard is *guard: an implicit add for a
// TxnOffsetCommit v5 under transaction.version 2 (with a fresh guard from restart when
// a marker voided it meanwhile, coordinator.Verifier.AddUnderGuards), a verification
// otherwise. It returns the codes and the Produce version whose translation applies
// (TRANSACTION_ABORTABLE is known from TxnOffsetCommit v5 as from Produce v11).
func (b *Broker) verifyOrAddTxnOffsets(ctx context.Context, r *kmsg.TxnOffsetCommitRequest, tps []txn.TopicPartition,
	guard **replication.TxnVerification, restart func() (*replication.TxnVerification, error)) ([]int16, int16) {
	produceVersion := int16(0)
	if r.Version >= 5 {
		produceVersion = 11
	}
	if !b.verifier.ImplicitAdd(r.Version, 5) {
		return b.verifier.Verify(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, tps), produceVersion
	}
	guards := []*replication.TxnVerification{*guard}
	codes := b.verifier.AddUnderGuards(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, tps, guards,
		func(int) (*replication.TxnVerification, error) { return restart() })
	*guard = guards[0]
	return codes, produceVersion
}
