package txn

import "github.com/twmb/franz-go/pkg/kerr"

// VerifyPartitions answers a partition leader's KIP-890 question (AddPartitionsToTxn
// v4+ with VerifyOnly): are partitions in the ongoing transaction of id at producer pid
// and epoch? It writes nothing. A refusal of the whole transaction comes back as code
// (INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED, CONCURRENT_TRANSACTIONS while a
// transition is written or the transaction is being completed); otherwise each
// partition gets 0 when it is in the transaction and TRANSACTION_ABORTABLE when it is
// not (Kafka's handleVerifyPartitionsInTransaction).
func (s *Shard) VerifyPartitions(id string, pid int64, epoch int16, partitions []TopicPartition) (code int16, perPartition []int16) {
	t := s.txns[id]
	if code := checkProducer(t, pid, epoch); code != 0 {
		return code, nil
	}
	if t.State == StatePrepareCommit || t.State == StatePrepareAbort {
		return kerr.ConcurrentTransactions.Code, nil
	}
	perPartition = make([]int16, len(partitions))
	for i, tp := range partitions {
		if _, ok := t.Partitions[tp]; !ok || t.State != StateOngoing {
			perPartition[i] = kerr.TransactionAbortable.Code
		}
	}
	return 0, perPartition
}
