package coordinator

// The transaction coordinator's answer to the request that spans shards:
// ListTransactions (every serving shard).

import (
	"regexp"
	"slices"
	"sync"
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
	match, err := transactionalIDPattern(r)
	if err != nil {
		resp := r.ResponseKind().(*kmsg.ListTransactionsResponse)
		resp.ErrorCode = kerr.InvalidRegularExpression.Code
		ch := make(chan kmsg.Response, 1)
		ch <- resp
		return ch
	}
	return collectServing(tc.Router, func(now time.Time, s *txn.Shard) []kmsg.ListTransactionsResponseTransactionState {
		states := s.List(now, r.StateFilters, r.ProducerIDFilters, minDuration)
		if match != nil {
			states = slices.DeleteFunc(states, func(st kmsg.ListTransactionsResponseTransactionState) bool {
				return !match.MatchString(st.TransactionalID)
			})
		}
		return states
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

// transactionalIDPattern is ListTransactions v2's TransactionalIdPattern (KIP-1152)
// as a whole-id match; nil when there is none (null or empty: every id).
func transactionalIDPattern(r *kmsg.ListTransactionsRequest) (*regexp.Regexp, error) {
	if r.Version < 2 || r.TransactionalIDPattern == nil || *r.TransactionalIDPattern == "" {
		return nil, nil
	}
	return regexp.Compile("^(?:" + *r.TransactionalIDPattern + ")$")
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

// InitProducerID runs r, which names a transactional id, on its shard and calls reply
// once with the answer in r's version (PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before
// v4). nextID hands out producer ids without waiting (ProducerIDs.TryGenerate, after
// ProducerIDs.Ready): the executor never waits for one.
func (tc *TxnCoordinator) InitProducerID(r *kmsg.InitProducerIDRequest, nextID func() (int64, bool), reply func(kmsg.Response)) {
	var once sync.Once
	send := func(resp kmsg.Response) {
		once.Do(func() {
			if ir := resp.(*kmsg.InitProducerIDResponse); r.Version < 4 && ir.ErrorCode == kerr.ProducerFenced.Code {
				ir.ErrorCode = kerr.InvalidProducerEpoch.Code
			}
			reply(resp)
		})
	}
	tc.Submit(*r.TransactionalID, func(now time.Time, s *txn.Shard) txn.Effects {
		return s.InitProducerID(now, r, nextID, send)
	}, func(code int16) { send(InitProducerIDError(r, code)) })
}

// InitProducerIDError is r's answer refused with code.
func InitProducerIDError(r *kmsg.InitProducerIDRequest, code int16) *kmsg.InitProducerIDResponse {
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch, resp.ErrorCode = -1, -1, code
	return resp
}
