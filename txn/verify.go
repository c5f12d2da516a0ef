package txn

import "github.com/twmb/franz-go/pkg/kerr"

// VerifyPartitions answers a partition leader's KIP-890 question (AddPartitionsToTxn
// v4+ with VerifyOnly): are partitions in the ongoing transaction of id at producer pid
// and epoch? It writes nothing. A refusal of the whole transaction comes back as code
// (INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED, CONCURRENT_TRANSACTIONS while the
// transaction is being ended or completed); otherwise each partition gets 0 when it is
// in the committed ongoing transaction, CONCURRENT_TRANSACTIONS while its
// AddPartitionsToTxn is being written, and TRANSACTION_ABORTABLE when it is not in the
// transaction (Kafka's handleVerifyPartitionsInTransaction, which refuses the whole
// request during any pending write).
func (s *Shard) VerifyPartitions(id string, pid int64, epoch int16, partitions []TopicPartition) (code int16, perPartition []int16) {
	t := s.txns[id]
	switch {
	case t == nil || t.ProducerID != pid:
		return kerr.InvalidProducerIDMapping.Code, nil
	case t.ProducerEpoch != epoch:
		return kerr.ProducerFenced.Code, nil
	case t.State == StatePrepareCommit || t.State == StatePrepareAbort:
		return kerr.ConcurrentTransactions.Code, nil
	case t.pending != nil && t.pending.State != StateOngoing:
		return kerr.ConcurrentTransactions.Code, nil
	}
	// The committed state answers; a pending AddPartitions (the producer adding other
	// partitions meanwhile) only makes its own partitions wait.
	perPartition = make([]int16, len(partitions))
	for i, tp := range partitions {
		_, committed := t.Partitions[tp]
		switch {
		case committed && t.State == StateOngoing:
		case t.pending != nil && hasPartition(t.pending, tp):
			perPartition[i] = kerr.ConcurrentTransactions.Code
		default:
			perPartition[i] = kerr.TransactionAbortable.Code
		}
	}
	return 0, perPartition
}

func hasPartition(t *Transaction, tp TopicPartition) bool {
	_, ok := t.Partitions[tp]
	return ok
}
