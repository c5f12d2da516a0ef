package broker

// ListTransactions (key 66), v0-1: the transactional ids of every __transaction_state
// partition this broker coordinates, filtered by state, producer id and (v1) the
// minimum running time of the ongoing transaction. While a partition is still loading
// the answer carries COORDINATOR_LOAD_IN_PROGRESS with what is known, as in Kafka.
// States in the filter that are not Kafka's are reported in unknown_state_filters.

import (
	"context"
	"github.com/petrel-broker/petrel/coordinator"
	"slices"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/petrel-broker/petrel/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.ListTransactions, 0, 1, (*Broker).handleListTransactions, apiOpts{
		authorize: authorizeListTransactions,
	})
}

func (b *Broker) handleListTransactions(_ context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.ListTransactionsRequest)
	serving := b.txns.Serving()
	loading := len(b.txns.Loaded()) > len(serving)
	minDuration := time.Duration(0)
	if r.Version >= 1 && r.DurationFilterMillis > 0 {
		minDuration = time.Duration(r.DurationFilterMillis) * time.Millisecond
	}
	return rpc.RespondLater(coordinator.Gather(len(serving), func(i int, done func([]kmsg.ListTransactionsResponseTransactionState)) {
		b.txns.SubmitTo(serving[i], func(now time.Time, s *txn.Shard) txn.Effects {
			done(s.List(now, r.StateFilters, r.ProducerIDFilters, minDuration))
			return txn.Effects{}
		}, func(int16) { done(nil) })
	}, func(results [][]kmsg.ListTransactionsResponseTransactionState) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.ListTransactionsResponse)
		resp.TransactionStates = []kmsg.ListTransactionsResponseTransactionState{}
		for _, ts := range results {
			resp.TransactionStates = append(resp.TransactionStates, ts...)
		}
		for _, st := range r.StateFilters {
			if !txn.KnownState(st) {
				resp.UnknownStateFilters = append(resp.UnknownStateFilters, st)
			}
		}
		if loading {
			resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		}
		return resp
	}))
}

// authorizeListTransactions is ListTransactions's authorization rule (checkRequest).
func authorizeListTransactions(b *Broker, req *rpc.Request) authzDecision {
	return authzDecision{merge: func(resp kmsg.Response) {
		out := resp.(*kmsg.ListTransactionsResponse)
		out.TransactionStates = slices.DeleteFunc(out.TransactionStates, func(s kmsg.ListTransactionsResponseTransactionState) bool {
			return !b.authorized(req, auth.OpDescribe, auth.ResourceTransactionalID, s.TransactionalID)
		})
	}}
}
