package coordinator

// The transaction coordinator's answer to the request that spans shards:
// ListTransactions (every serving shard).

import (
	"time"

	"github.com/petrel-broker/petrel/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListTransactions answers r with the transactions of every serving shard, its unknown
// state filters named; COORDINATOR_LOAD_IN_PROGRESS while a partition is still loading.
func (tc *TxnCoordinator) ListTransactions(r *kmsg.ListTransactionsRequest) <-chan kmsg.Response {
	minDuration := time.Duration(0)
	if r.Version >= 1 && r.DurationFilterMillis > 0 {
		minDuration = time.Duration(r.DurationFilterMillis) * time.Millisecond
	}
	return collectServing(tc.Router, func(now time.Time, s *txn.Shard) []kmsg.ListTransactionsResponseTransactionState {
		return s.List(now, r.StateFilters, r.ProducerIDFilters, minDuration)
	}, func(states []kmsg.ListTransactionsResponseTransactionState, loading bool) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.ListTransactionsResponse)
		resp.TransactionStates = states
		for _, st := range r.StateFilters {
			if !txn.KnownState(st) {
				resp.UnknownStateFilters = append(resp.UnknownStateFilters, st)
			}
		}
		if loading {
			resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		}
		return resp
	})
}

// DescribeTransactions answers r from each transactional id's shard.
func (tc *TxnCoordinator) DescribeTransactions(r *kmsg.DescribeTransactionsRequest) <-chan kmsg.Response {
	return Gather(len(r.TransactionalIDs), func(i int, done func(kmsg.DescribeTransactionsResponseTransactionState)) {
		id := r.TransactionalIDs[i]
		tc.Submit(id, func(_ time.Time, s *txn.Shard) txn.Effects {
			done(s.Describe(id))
			return txn.Effects{}
		}, func(code int16) {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID, st.ErrorCode, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, code, -1, -1, -1
			done(st)
		})
	}, func(results []kmsg.DescribeTransactionsResponseTransactionState) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.DescribeTransactionsResponse)
		resp.TransactionStates = append([]kmsg.DescribeTransactionsResponseTransactionState{}, results...)
		return resp
	})
}
