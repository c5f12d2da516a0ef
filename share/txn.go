package share

import (
	"cmp"
	"slices"
)

// FetchedBatch is one record batch of the log read an acquisition works on: its offset
// range and the producer fields read_committed needs (RecordBatch's baseOffset,
// lastOffset, producerId, isTransactional and isControlBatch).
type FetchedBatch struct {
	BaseOffset    int64
	LastOffset    int64
	ProducerID    int64
	Transactional bool
	Control       bool
}

// AbortedTransaction is one entry of a Fetch response's AbortedTransactions: a
// transaction of ProducerID, aborted, whose first record is at FirstOffset.
type AbortedTransaction struct {
	ProducerID  int64
	FirstOffset int64
}

// undeliverable marks the batches no member ever receives: control batches (commit
// and abort markers carry no application records) and, under read_committed, the
// batches of aborted transactions, found the way Kafka's consumer finds them: a
// transaction is open from its FirstOffset to its producer's next control batch
// (Kafka's SharePartition.maybeFilterAbortedTransactionalAcquiredRecords). Such
// records are Archived, so they are never delivered and the SPSO moves past them.
func undeliverable(batches []FetchedBatch, readCommitted bool, aborted []AbortedTransaction) []bool {
	out := make([]bool, len(batches))
	pending := slices.SortedFunc(slices.Values(aborted), func(a, b AbortedTransaction) int {
		return cmp.Compare(a.FirstOffset, b.FirstOffset)
	})
	open := map[int64]bool{}
	for i, b := range batches {
		for readCommitted && len(pending) > 0 && pending[0].FirstOffset <= b.LastOffset {
			open[pending[0].ProducerID] = true
			pending = pending[1:]
		}
		switch {
		case b.Control:
			out[i] = true
			delete(open, b.ProducerID)
		case readCommitted && b.Transactional && open[b.ProducerID]:
			out[i] = true
		}
	}
	return out
}
