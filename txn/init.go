package txn

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// InitProducerID answers an InitProducerId with a transactional id (Kafka's
// TransactionCoordinator.handleInitProducerId). A new id gets a producer id from
// newProducerID at epoch 0. A known id in Empty, CompleteCommit or CompleteAbort gets its
// epoch bumped (a new producer id at epoch 0 once the epoch is exhausted), which fences
// every producer of the earlier epoch. An Ongoing transaction is fenced: the epoch is
// bumped, the transaction aborted with it, and the caller answered
// CONCURRENT_TRANSACTIONS, to retry once the abort is complete. From v3 (KIP-360) a
// request carrying its producer id and epoch must name the current (or, retrying, the
// previous) epoch, else PRODUCER_FENCED. newProducerID returns false when no id is at
// hand (COORDINATOR_LOAD_IN_PROGRESS, retriable).
func (s *Shard) InitProducerID(now time.Time, r *kmsg.InitProducerIDRequest, newProducerID func() (int64, bool), send func(kmsg.Response)) Effects {
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	fail := func(code int16) Effects {
		resp.ErrorCode = code
		return Effects{Replies: []Reply{{send, resp}}}
	}
	id := *r.TransactionalID
	timeout := time.Duration(r.TransactionTimeoutMillis) * time.Millisecond
	switch {
	case id == "":
		return fail(kerr.InvalidRequest.Code)
	case r.TransactionTimeoutMillis <= 0 || timeout > s.cfg.MaxTimeout:
		return fail(kerr.InvalidTransactionTimeout.Code)
	case (r.ProducerID < 0) != (r.ProducerEpoch < 0):
		return fail(kerr.InvalidRequest.Code)
	}
	t, ok := s.txns[id]
	if !ok {
		pid, ok := newProducerID()
		if !ok {
			return fail(kerr.CoordinatorLoadInProgress.Code)
		}
		t = &Transaction{ID: id, ProducerID: pid, LastProducerID: -1, NextProducerID: -1, ProducerEpoch: noProducerEpoch,
			LastProducerEpoch: noProducerEpoch, Timeout: timeout, State: StateEmpty, Partitions: map[TopicPartition]struct{}{}}
		s.txns[id] = t
	}
	if t.pending != nil {
		return fail(kerr.ConcurrentTransactions.Code)
	}
	expected := r.ProducerID >= 0
	if expected && !(r.ProducerID == t.ProducerID && (r.ProducerEpoch == t.ProducerEpoch || r.ProducerEpoch == t.LastProducerEpoch)) &&
		!(r.ProducerID == t.LastProducerID && epochExhausted(r.ProducerEpoch)) {
		return fail(kerr.ProducerFenced.Code)
	}
	switch t.State {
	case StatePrepareCommit, StatePrepareAbort, StatePrepareEpochFence, StateDead:
		return fail(kerr.ConcurrentTransactions.Code)
	case StateOngoing:
		return s.fence(now, t, func(code int16) {
			if code == 0 {
				code = kerr.ConcurrentTransactions.Code
			}
			resp.ErrorCode = code
			send(resp)
		})
	}
	next := t.clone()
	next.Timeout, next.State, next.StartTime = timeout, StateEmpty, time.Time{}
	clear(next.Partitions)
	switch {
	case epochExhausted(t.ProducerEpoch) && (!expected || r.ProducerEpoch == t.ProducerEpoch):
		pid, ok := newProducerID()
		if !ok {
			return fail(kerr.CoordinatorLoadInProgress.Code)
		}
		next.LastProducerID, next.ProducerID = t.ProducerID, pid
		next.LastProducerEpoch, next.ProducerEpoch = noProducerEpoch, 0
	case !expected || r.ProducerEpoch == t.ProducerEpoch:
		next.LastProducerEpoch, next.ProducerEpoch = t.ProducerEpoch, t.ProducerEpoch+1
	default: // a retry of the bump that already happened: the same answer again
		resp.ProducerID, resp.ProducerEpoch = t.ProducerID, t.ProducerEpoch
		return Effects{Replies: []Reply{{send, resp}}}
	}
	eff := s.write(now, t, next, func(code int16) Effects {
		if code != 0 {
			resp.ErrorCode = code
			return Effects{}
		}
		resp.ProducerID, resp.ProducerEpoch = next.ProducerID, next.ProducerEpoch
		return Effects{}
	})
	eff.Replies = []Reply{{send, resp}}
	return eff
}
