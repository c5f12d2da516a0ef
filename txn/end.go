package txn

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// checkProducer returns the code refusing a request of producer pid at epoch on t (0
// when it may proceed): Kafka's INVALID_PRODUCER_ID_MAPPING for another producer id,
// PRODUCER_FENCED for another epoch, CONCURRENT_TRANSACTIONS while a write is pending.
func checkProducer(t *Transaction, pid int64, epoch int16) int16 {
	switch {
	case t == nil || t.ProducerID != pid:
		return kerr.InvalidProducerIDMapping.Code
	case t.ProducerEpoch != epoch:
		return kerr.ProducerFenced.Code
	case t.pending != nil:
		return kerr.ConcurrentTransactions.Code
	}
	return 0
}

// AddPartitions adds partitions to the transaction of id (AddPartitionsToTxn and
// AddOffsetsToTxn): in Empty or Complete* a new transaction starts (Ongoing); partitions
// already in it are not written again. done gets the outcome: 0, or a Kafka code for
// every partition. A call arriving while the producer's previous add, or the
// completion of its previous transaction, is being written waits for that write (up to
// maxQueued calls) instead of getting CONCURRENT_TRANSACTIONS.
func (s *Shard) AddPartitions(now time.Time, id string, pid int64, epoch int16, partitions []TopicPartition, done func(code int16)) Effects {
	return s.addPartitions(now, id, pid, epoch, partitions, false, done)
}

// addPartitions is AddPartitions; tv2 marks the transaction as driven by a
// Transactions V2 client (an implicit add, tv2.go).
func (s *Shard) addPartitions(now time.Time, id string, pid int64, epoch int16, partitions []TopicPartition, tv2 bool, done func(code int16)) Effects {
	t := s.txns[id]
	if tv2 && rotating(t, pid, epoch) {
		done(kerr.ConcurrentTransactions.Code)
		return Effects{}
	}
	if t != nil && t.ProducerID == pid && t.ProducerEpoch == epoch && t.pending != nil && !t.stalled && len(t.queued) < maxQueued {
		switch t.pending.State {
		case StateOngoing, StateCompleteCommit, StateCompleteAbort:
			// Another add of this producer (a client adds from each of its broker
			// connections at once), or the completion of its previous transaction, is
			// being written: wait for it rather than answer CONCURRENT_TRANSACTIONS and
			// send the producer into its retry backoff.
			t.queued = append(t.queued, func(now time.Time) Effects {
				return s.addPartitions(now, id, pid, epoch, partitions, tv2, done)
			})
			return Effects{}
		}
	}
	if code := checkProducer(t, pid, epoch); code != 0 {
		done(code)
		return Effects{}
	}
	switch t.State {
	case StatePrepareCommit, StatePrepareAbort:
		done(kerr.ConcurrentTransactions.Code)
		return Effects{}
	case StateDead, StatePrepareEpochFence:
		done(kerr.InvalidTxnState.Code)
		return Effects{}
	}
	missing := false
	for _, tp := range partitions {
		if _, ok := t.Partitions[tp]; !ok {
			missing = true
		}
	}
	if t.State == StateOngoing && !missing {
		done(0)
		return Effects{}
	}
	next := t.clone()
	next.ClientTV2 = tv2
	if t.State != StateOngoing {
		clear(next.Partitions)
		next.State, next.StartTime = StateOngoing, now
	}
	for _, tp := range partitions {
		next.Partitions[tp] = struct{}{}
	}
	return s.write(now, t, next, func(code int16) Effects { done(code); return Effects{} })
}

// EndTransaction commits or aborts the ongoing transaction of id (EndTxn): it writes
// PrepareCommit or PrepareAbort, answers done once that is committed, then has the
// markers written and completes the transaction. A retried EndTxn of a transaction
// that already ended the same way succeeds; the other way is INVALID_TXN_STATE.
func (s *Shard) EndTransaction(now time.Time, id string, pid int64, epoch int16, commit bool, done func(code int16)) Effects {
	t := s.txns[id]
	if code := checkProducer(t, pid, epoch); code != 0 {
		done(code)
		return Effects{}
	}
	switch {
	case t.State == StateOngoing:
		return s.prepareEnd(now, t, t.ProducerEpoch, commit, done)
	case t.State == StateCompleteCommit && commit, t.State == StateCompleteAbort && !commit:
		done(0)
	case t.State == StatePrepareCommit && commit, t.State == StatePrepareAbort && !commit:
		done(kerr.ConcurrentTransactions.Code)
	default:
		done(kerr.InvalidTxnState.Code)
	}
	return Effects{}
}

// prepareEnd writes PrepareCommit or PrepareAbort at epoch, calls done with the
// write's outcome and, when it succeeded, asks for the markers.
func (s *Shard) prepareEnd(now time.Time, t *Transaction, epoch int16, commit bool, done func(code int16)) Effects {
	next := t.clone()
	if epoch != t.ProducerEpoch {
		next.LastProducerEpoch, next.ProducerEpoch = t.ProducerEpoch, epoch
	}
	next.State = StatePrepareAbort
	if commit {
		next.State = StatePrepareCommit
	}
	return s.write(now, t, next, func(code int16) Effects {
		done(code)
		if code != 0 {
			return Effects{}
		}
		return Effects{Markers: []*Markers{s.markers(next.ID)}}
	})
}

// completionRetryBackoff is the wait before the markers asked for again after a
// CompleteCommit or CompleteAbort whose append failed.
const completionRetryBackoff = 500 * time.Millisecond

// markers returns the Markers of the prepared transaction of id, whose Done writes
// CompleteCommit or CompleteAbort; when that write fails the markers are asked for
// again (they are idempotent), unless the shard was unloaded. A CompleteCommit or
// CompleteAbort that times out asks for nothing: it is pending until it lands or the
// partition is unloaded (the next load resumes the prepared transaction), and markers
// asked for again could still be in flight once it landed, where a late COMMIT or
// ABORT would end the producer's next transaction at the same epoch.
func (s *Shard) markers(txnID string) *Markers {
	t := s.txns[txnID]
	m := &Markers{TransactionalID: txnID, ProducerID: t.ProducerID, ProducerEpoch: t.ProducerEpoch,
		Commit: t.State == StatePrepareCommit, CoordinatorEpoch: s.coordinatorEpoch, Partitions: t.SortedPartitions()}
	if t.ClientTV2 {
		m.TransactionVersion = clientTV2
	}
	m.Done = func(now time.Time) Effects {
		t := s.txns[txnID]
		if t == nil || t.pending != nil || (t.State != StatePrepareCommit && t.State != StatePrepareAbort) {
			return Effects{}
		}
		next := t.clone()
		next.State = StateCompleteAbort
		if t.State == StatePrepareCommit {
			next.State = StateCompleteCommit
		}
		clear(next.Partitions)
		next.StartTime = time.Time{}
		if t.NextProducerID >= 0 { // a TV2 end rotated the producer id (tv2.go)
			next.LastProducerID, next.ProducerID, next.NextProducerID = t.ProducerID, t.NextProducerID, -1
			next.LastProducerEpoch, next.ProducerEpoch = noProducerEpoch, 0
		}
		return s.writeAnswering(now, t, next, func(code int16) Effects {
			if code != 0 && code != kerr.NotCoordinator.Code {
				again := s.markers(txnID)
				again.Backoff = completionRetryBackoff
				return Effects{Markers: []*Markers{again}}
			}
			return Effects{}
		}, func(int16) Effects { return Effects{} })
	}
	return m
}

// fence bumps the epoch of t's ongoing transaction and aborts it with the new epoch
// (InitProducerId of a new producer, or a timed-out transaction); done gets the
// outcome of writing PrepareAbort.
func (s *Shard) fence(now time.Time, t *Transaction, done func(code int16)) Effects {
	epoch := t.ProducerEpoch
	if epoch < 1<<15-1 {
		epoch++
	}
	return s.prepareEnd(now, t, epoch, false, done)
}

// AbortTimedOut aborts every ongoing transaction older than its timeout, fencing its
// producer (Kafka's abortTimedOutTransactions, every
// transaction.abort.timed.out.transaction.cleanup.interval.ms).
func (s *Shard) AbortTimedOut(now time.Time) Effects {
	var out Effects
	for _, id := range s.IDs() {
		t := s.txns[id]
		if t.State != StateOngoing || t.pending != nil || now.Before(t.StartTime.Add(t.Timeout)) {
			continue
		}
		out = merge(out, s.fence(now, t, func(int16) {}))
	}
	return out
}

// Loaded resumes what a previous coordinator left half done: every prepared
// transaction gets its markers written and is completed.
func (s *Shard) Loaded(now time.Time) []*Markers {
	var out []*Markers
	for _, id := range s.IDs() {
		if st := s.txns[id].State; st == StatePrepareCommit || st == StatePrepareAbort {
			out = append(out, s.markers(id))
		}
	}
	return out
}

// merge combines two Effects: both writes as one batch, both Committed callbacks in
// order, all replies and markers.
func merge(a, b Effects) Effects {
	if len(a.Records) == 0 && a.Committed == nil && len(a.Replies) == 0 && len(a.Markers) == 0 {
		return b
	}
	out := Effects{Records: append(a.Records, b.Records...), Replies: append(a.Replies, b.Replies...),
		Markers: append(a.Markers, b.Markers...)}
	out.Committed = both(a.Committed, b.Committed)
	out.TimedOut = both(a.TimedOut, b.TimedOut)
	return out
}

// both runs ca then cb (either may be nil) and merges what they return.
func both(ca, cb func(code int16) Effects) func(code int16) Effects {
	return func(code int16) Effects {
		var ea, eb Effects
		if ca != nil {
			ea = ca(code)
		}
		if cb != nil {
			eb = cb(code)
		}
		return merge(ea, eb)
	}
}
