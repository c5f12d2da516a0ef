package txn

// Transactions V2 (KIP-890 part 2, transaction.version 2): the epoch is bumped at every
// transaction end, so the markers carry an epoch the producer never wrote with and a
// zombie of the ended transaction is fenced everywhere; partitions join a transaction
// implicitly (Produce v12 and TxnOffsetCommit v5 make the partition's leader add them,
// AddPartitionsImplicit); EndTxn v5 tells the producer its next id and epoch. Producers
// of TV1 (EndTxn v4 and older) keep the rules of end.go on the same shard.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clientTV2 is TransactionLogValue's ClientTransactionVersion of a TV2 client.
const clientTV2 = 2

// maxProducerEpoch is Short.MAX_VALUE, the highest epoch a producer id can reach.
const maxProducerEpoch = 1<<15 - 1

// EndTransactionV2 commits or aborts the transaction of id for a TV2 client (EndTxn
// v5). An ongoing transaction is prepared with the epoch bumped (the markers carry
// the bumped epoch); when the epoch is exhausted the prepared transaction keeps its id
// at the last epoch and names a new producer id (from newProducerID), which its
// completion switches to at epoch 0. done gets 0 with the producer id and epoch the
// client uses next, or a refusal with -1, -1.
//
// Also as Kafka answers a TV2 client: an abort with no transaction open (Empty or
// Complete*) still bumps the epoch (an empty abort); a retry of the end that bumped the
// epoch (the previous epoch, or the previous producer id after a rotation, on a
// transaction that ended the same way) gets the current id and epoch; the previous
// epoch on an ongoing transaction is PRODUCER_FENCED.
func (s *Shard) EndTransactionV2(now time.Time, id string, pid int64, epoch int16, commit bool, newProducerID func() (int64, bool), done func(code int16, pid int64, epoch int16)) Effects {
	fail := func(code int16) Effects { done(code, -1, -1); return Effects{} }
	t := s.txns[id]
	if t == nil {
		return fail(kerr.InvalidProducerIDMapping.Code)
	}
	current := t.ProducerID == pid && t.ProducerEpoch == epoch
	retry := !current && isEndRetry(t, pid, epoch)
	switch {
	case !current && !retry && t.ProducerID != pid && t.LastProducerID != pid:
		return fail(kerr.InvalidProducerIDMapping.Code)
	case !current && !retry:
		return fail(kerr.ProducerFenced.Code)
	case t.pending != nil:
		return fail(kerr.ConcurrentTransactions.Code)
	}
	sameOutcome := (t.State == StateCompleteCommit || t.State == StatePrepareCommit) == commit
	switch t.State {
	case StateOngoing:
		if retry {
			return fail(kerr.ProducerFenced.Code)
		}
		return s.prepareEndV2(now, t, commit, newProducerID, done)
	case StateCompleteCommit, StateCompleteAbort, StateEmpty:
		switch {
		case retry && sameOutcome && t.State != StateEmpty:
			done(0, t.ProducerID, t.ProducerEpoch)
			return Effects{}
		case current && !commit:
			return s.prepareEndV2(now, t, false, newProducerID, done) // an empty abort
		}
	case StatePrepareCommit, StatePrepareAbort:
		if sameOutcome && retry {
			return fail(kerr.ConcurrentTransactions.Code)
		}
	}
	return fail(kerr.InvalidTxnState.Code)
}

// isEndRetry reports whether pid and epoch name the producer as it was before the last
// TV2 end bumped its epoch (or rotated its id).
func isEndRetry(t *Transaction, pid int64, epoch int16) bool {
	if !t.ClientTV2 || epoch < 0 {
		return false
	}
	switch t.State {
	case StatePrepareCommit, StatePrepareAbort:
		return pid == t.ProducerID && epoch == t.LastProducerEpoch
	case StateCompleteCommit, StateCompleteAbort:
		return pid == t.ProducerID && epoch == t.LastProducerEpoch ||
			pid == t.LastProducerID && t.ProducerEpoch == 0 && epochExhausted(epoch)
	}
	return false
}

// prepareEndV2 writes PrepareCommit or PrepareAbort with the epoch bumped (and a new
// producer id named when the epoch is exhausted), answers done once that is committed
// and has the markers written with the bumped epoch.
func (s *Shard) prepareEndV2(now time.Time, t *Transaction, commit bool, newProducerID func() (int64, bool), done func(code int16, pid int64, epoch int16)) Effects {
	next := t.clone()
	next.ClientTV2, next.NextProducerID = true, -1
	if epochExhausted(t.ProducerEpoch) {
		npid, ok := newProducerID()
		if !ok {
			done(kerr.CoordinatorLoadInProgress.Code, -1, -1)
			return Effects{}
		}
		next.NextProducerID = npid
	}
	next.LastProducerEpoch, next.ProducerEpoch = t.ProducerEpoch, min(t.ProducerEpoch+1, maxProducerEpoch)
	next.State = StatePrepareAbort
	if commit {
		next.State = StatePrepareCommit
	}
	if t.State != StateOngoing {
		clear(next.Partitions)
	}
	return s.write(now, t, next, func(code int16) Effects {
		if code != 0 {
			done(code, -1, -1)
			return Effects{}
		}
		if next.NextProducerID >= 0 {
			done(0, next.NextProducerID, 0)
		} else {
			done(0, next.ProducerID, next.ProducerEpoch)
		}
		return Effects{Markers: []*Markers{s.markers(next.ID)}}
	})
}

// AddPartitionsImplicit adds partitions to the transaction of id for a TV2 client: the
// partition leader's add on a Produce v12 or TxnOffsetCommit v5 (AddPartitionsToTxn v5
// without VerifyOnly between brokers). It is AddPartitions, but for the producer id a
// TV2 end has just handed out while its previous transaction is still being completed,
// which waits (CONCURRENT_TRANSACTIONS, retried by the leader) rather than being
// INVALID_PRODUCER_ID_MAPPING.
func (s *Shard) AddPartitionsImplicit(now time.Time, id string, pid int64, epoch int16, partitions []TopicPartition, done func(code int16)) Effects {
	return s.addPartitions(now, id, pid, epoch, partitions, true, done)
}

// rotating reports whether pid at epoch is the producer id a TV2 end handed out to t
// while t's previous transaction is not yet complete.
func rotating(t *Transaction, pid int64, epoch int16) bool {
	if t == nil || epoch != 0 {
		return false
	}
	if t.NextProducerID == pid {
		return true
	}
	return t.pending != nil && t.pending.ProducerID == pid && t.ProducerID != pid
}

// writeTV2Fields sets the KIP-890 fields of v from t: version 1 for a transaction of a
// TV2 client or with a rotation pending, else v stays version 0 as TV1 writes it.
func writeTV2Fields(v *kmsg.TxnMetadataValue, t *Transaction) {
	if !t.ClientTV2 && t.NextProducerID < 0 {
		return
	}
	v.Version = 1
	v.PreviousProducerID, v.NextProducerID, v.NextProducerEpoch = t.LastProducerID, t.NextProducerID, -1
	if t.ClientTV2 {
		v.ClientTransactionVersion = clientTV2
	}
}

// readTV2Fields sets t's KIP-890 fields from a version 1 value.
func readTV2Fields(t *Transaction, v *kmsg.TxnMetadataValue) {
	if v.PreviousProducerID >= 0 {
		t.LastProducerID = v.PreviousProducerID
	}
	if v.NextProducerID >= 0 {
		t.NextProducerID = v.NextProducerID
	}
	t.ClientTV2 = v.ClientTransactionVersion >= clientTV2
}
