package broker

// Writing a transaction's markers to its partitions' leaders (WriteTxnMarkers, key 27)
// is not implemented yet: a prepared transaction stays PrepareCommit or PrepareAbort.
// No transaction can reach a prepared state while AddPartitionsToTxn, AddOffsetsToTxn
// and EndTxn are not served.

import "github.com/petrel-broker/petrel/txn"

// writeMarkers writes m's markers and completes the transaction on the shard of
// partition.
func (tc *txnCoordinator) writeMarkers(partition int32, m *txn.Markers) {
	tc.b.logger.Warn("transaction markers are not implemented; the transaction stays prepared",
		"transactional_id", m.TransactionalID, "partition", partition)
}
