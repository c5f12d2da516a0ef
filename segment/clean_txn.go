package segment

import "slices"

// Control record types of transaction markers (the int16 after the key's version).
const (
	controlTypeAbort  = 0
	controlTypeCommit = 1
)

// ProducerLastRecord is what the cleaner needs of an active producer (Kafka's
// LogCleaner lastRecordsOfActiveProducers): the last offset of its latest data batch
// (-1 when it has none, as after an epoch bump by a marker) and its current epoch. The
// batch ending at LastDataOffset — or, without one, a marker of ProducerEpoch — holds
// the producer's last sequence and epoch and survives cleaning, empty if need be.
type ProducerLastRecord struct {
	LastDataOffset int64
	ProducerEpoch  int16
}

// txnWalker follows the transactions a cleaning pass reads, in offset order (Kafka's
// CleanedTransactionMetadata): which transactional batches belong to an aborted
// transaction, and whether a marker's transaction still has batches in the log. One
// walker reads the pass's segments from the log start, so "still has batches" means
// anywhere before the marker.
type txnWalker struct {
	// pending are the aborted transactions not yet reached, by first offset.
	pending []AbortedTxn
	// ongoingAborted maps a producer to the aborted transaction it is in, and whether a
	// batch of it was read in this pass.
	ongoingAborted map[int64]*walkedAbort
	// ongoingCommitted holds the producers with a transactional batch read since their
	// last marker that is not aborted: a committed transaction with data left.
	ongoingCommitted map[int64]bool
}

type walkedAbort struct {
	txn          AbortedTxn
	dataObserved bool
}

// newTxnWalker starts a walker at offset from with the partition's aborted
// transactions: those whose marker lies at or after from matter.
func newTxnWalker(aborted []AbortedTxn, from int64) *txnWalker {
	var pending []AbortedTxn
	for _, a := range aborted {
		if a.LastOffset >= from {
			pending = append(pending, a)
		}
	}
	slices.SortStableFunc(pending, func(a, b AbortedTxn) int { return compareInt64(a.FirstOffset, b.FirstOffset) })
	return &txnWalker{pending: pending, ongoingAborted: map[int64]*walkedAbort{}, ongoingCommitted: map[int64]bool{}}
}

// reach makes the aborted transactions that start at or before offset ongoing.
func (w *txnWalker) reach(offset int64) {
	for len(w.pending) > 0 && w.pending[0].FirstOffset <= offset {
		a := w.pending[0]
		w.pending = w.pending[1:]
		if _, ok := w.ongoingAborted[a.ProducerID]; !ok {
			w.ongoingAborted[a.ProducerID] = &walkedAbort{txn: a}
		}
	}
}

// dataBatch reads a data batch and reports whether it belongs to an aborted
// transaction (its records are then discarded).
func (w *txnWalker) dataBatch(h BatchHeader) (aborted bool) {
	w.reach(h.LastOffset())
	if !h.Transactional() {
		return false
	}
	if a, ok := w.ongoingAborted[h.ProducerID]; ok {
		a.dataObserved = true
		return true
	}
	w.ongoingCommitted[h.ProducerID] = true
	return false
}

// controlBatch reads a control batch of type typ and reports whether it may be
// discarded: an ABORT or COMMIT marker whose transaction has no batch left before it
// (once its delete horizon has passed), or an empty control batch. Unknown control
// types stay.
func (w *txnWalker) controlBatch(h BatchHeader, typ int16) (discardable bool) {
	w.reach(h.LastOffset())
	if h.RecordCount == 0 {
		return true // cleaned before: nothing left to keep
	}
	switch typ {
	case controlTypeAbort:
		a, ok := w.ongoingAborted[h.ProducerID]
		delete(w.ongoingAborted, h.ProducerID)
		return !ok || !a.dataObserved
	case controlTypeCommit:
		had := w.ongoingCommitted[h.ProducerID]
		delete(w.ongoingCommitted, h.ProducerID)
		return !had
	}
	return false
}

// deriveProducers is the producer state the batches of the plan's segments leave, for
// callers that pass none (CleanOptions.Producers): a data batch sets its producer's
// last data offset, a marker with a newer epoch clears it.
func (p *CleanPlan) deriveProducers() (map[int64]ProducerLastRecord, error) {
	out := map[int64]ProducerLastRecord{}
	err := p.forEachHeader(func(h BatchHeader) bool {
		if h.ProducerID < 0 {
			return true
		}
		e, known := out[h.ProducerID]
		switch {
		case !h.Control():
			out[h.ProducerID] = ProducerLastRecord{LastDataOffset: h.LastOffset(), ProducerEpoch: h.ProducerEpoch}
		case !known || h.ProducerEpoch > e.ProducerEpoch:
			out[h.ProducerID] = ProducerLastRecord{LastDataOffset: -1, ProducerEpoch: h.ProducerEpoch}
		}
		return true
	})
	return out, err
}

// lastOfProducer reports whether h holds its active producer's last sequence and epoch
// (Kafka's isBatchLastRecordOfProducer): such a batch survives, empty if nothing of it
// stays.
func (p *CleanPlan) lastOfProducer(h BatchHeader) bool {
	if h.ProducerID < 0 {
		return false
	}
	e, ok := p.producers[h.ProducerID]
	if !ok {
		return false
	}
	if e.LastDataOffset >= 0 {
		return h.LastOffset() == e.LastDataOffset
	}
	return h.Control() && h.ProducerEpoch == e.ProducerEpoch
}
