package broker

// EndTxn (key 26), v0-5 (v4 is v3's body; v5 under transaction.version 2 is
// Transactions V2, handleEndTxnV2 in txn_v2.go, otherwise v3's rules with ProducerId and
// ProducerEpoch -1): commits or aborts the producer's transaction
// (txn.Shard.EndTransaction). The answer comes once PrepareCommit or PrepareAbort is
// written; the markers follow (coordinator/txn_markers.go), and until the transaction
// is complete the id answers CONCURRENT_TRANSACTIONS. A retry of an EndTxn that already ended the
// transaction the same way succeeds; no open transaction, or the other outcome, is
// INVALID_TXN_STATE. Refusals as AddPartitionsToTxn's.

import (
	"context"
	"time"

	"github.com/petrel-broker/petrel/rpc"
	"github.com/petrel-broker/petrel/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.EndTxn, 0, 5, (*Broker).handleEndTxn, apiOpts{
		authorize: authorizeEndTxn,
	})
}

func (b *Broker) handleEndTxn(ctx context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.EndTxnRequest)
	answer := func(code int16) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = fencedForVersion(code, r.Version, 2)
		resp.ProducerID, resp.ProducerEpoch = -1, -1 // v5 on a cluster below TV2
		return resp
	}
	if r.TransactionalID == "" {
		return rpc.Respond(answer(kerr.InvalidRequest.Code))
	}
	if r.Version >= 5 && b.transactionVersion() >= 2 {
		return b.handleEndTxnV2(r)
	}
	return rpc.RespondLater(b.txns.Respond(r.TransactionalID, func(now time.Time, s *txn.Shard, send func(kmsg.Response)) txn.Effects {
		return s.EndTransaction(now, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit,
			func(code int16) { send(answer(code)) })
	}, answer))
}

// authorizeEndTxn is EndTxn's authorization rule (checkRequest).
func authorizeEndTxn(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.EndTxnRequest)
	z := checksOf(b, req)
	if !z.txnOK(r.TransactionalID) {
		return z.whole(func(resp kmsg.Response) { resp.(*kmsg.EndTxnResponse).ErrorCode = codeTxnAuthz })
	}
	return authzDecision{} // nothing refused
}
