package replication

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/petrel-broker/petrel/segment"
)

// ProducerBatchesRetained is how many of a producer's latest batches a partition
// remembers for deduplication: Kafka's NUM_BATCHES_TO_RETAIN, the most in-flight
// requests an idempotent producer may have (max.in.flight.requests.per.connection ≤ 5).
const ProducerBatchesRetained = 5

// ProducerBatch is one appended batch of an idempotent producer.
type ProducerBatch struct {
	FirstSequence int32
	LastSequence  int32
	FirstOffset   int64
	LastOffset    int64
	// Timestamp is the batch's maxTimestamp.
	Timestamp int64
}

// ProducerEntry is what a partition knows about one producer id: its latest epoch and
// its latest batches in that epoch, oldest first (at most ProducerBatchesRetained).
type ProducerEntry struct {
	ProducerID    int64
	ProducerEpoch int16
	Batches       []ProducerBatch
	// LastTimestamp is the maxTimestamp of the producer's latest batch; expiry
	// (producer.id.expiration.ms) counts from it, as in Kafka.
	LastTimestamp int64
	// TxnOpen tells that the producer has an ongoing transaction in this partition,
	// whose first batch is at TxnFirstOffset: from its first transactional batch until
	// a marker ends it.
	TxnOpen        bool
	TxnFirstOffset int64
	// CoordinatorEpoch is the coordinator epoch of the producer's latest transaction
	// marker here, -1 before one: a marker from an older coordinator is
	// TRANSACTION_COORDINATOR_FENCED (Kafka keeps it in the producer state entry).
	CoordinatorEpoch int32
}

// AbortedTxn is an aborted transaction of a partition: its producer, its first offset,
// the offset of its ABORT marker and the last stable offset right after the marker
// (Kafka's AbortedTxn, an entry of the segment's .txnindex).
type AbortedTxn = segment.AbortedTxn

// LastSequence is the last sequence number of the latest batch, or -1 when none.
func (e *ProducerEntry) LastSequence() int32 {
	if len(e.Batches) == 0 {
		return -1
	}
	return e.Batches[len(e.Batches)-1].LastSequence
}

// LastOffset is the last offset of the latest batch, or -1 when none.
func (e *ProducerEntry) LastOffset() int64 {
	if len(e.Batches) == 0 {
		return -1
	}
	return e.Batches[len(e.Batches)-1].LastOffset
}

// ProducerStates is one partition's producer state: an entry per producer id, built from
// the idempotent batches in the log. Not safe for concurrent use: the Partition guards
// it with its lock, so that checking a batch and appending it are one step.
type ProducerStates struct {
	entries map[int64]*ProducerEntry
	// open maps the producers with an ongoing transaction to its first offset.
	open map[int64]int64
	// aborted lists the aborted transactions in marker order (LastOffset ascending).
	aborted []AbortedTxn
}

// NewProducerStates returns an empty state.
func NewProducerStates() *ProducerStates {
	return &ProducerStates{} // maps allocated on first use: most partitions have no producer state
}

// FirstUnstableOffset is the first offset of the oldest ongoing transaction, or false
// when none is open: the last stable offset is min(this, high watermark).
func (s *ProducerStates) FirstUnstableOffset() (int64, bool) {
	first, ok := int64(math.MaxInt64), false
	for _, o := range s.open {
		first, ok = min(first, o), true
	}
	return first, ok
}

// AbortedBetween returns the aborted transactions that may hold records in [from, to):
// those whose marker is at or after from and that started before to (Kafka's
// collectAbortedTxns for a fetch).
func (s *ProducerStates) AbortedBetween(from, to int64) []AbortedTxn {
	i, _ := slices.BinarySearchFunc(s.aborted, from, func(a AbortedTxn, off int64) int {
		if a.LastOffset < off {
			return -1
		}
		return 1
	})
	var out []AbortedTxn
	for _, a := range s.aborted[i:] {
		if a.FirstOffset < to {
			out = append(out, a)
		}
	}
	return out
}

// Aborted returns a copy of every aborted transaction known.
func (s *ProducerStates) Aborted() []AbortedTxn { return slices.Clone(s.aborted) }

// trimAborted forgets aborted transactions whose marker lies below offset (the log
// start after retention).
func (s *ProducerStates) trimAborted(offset int64) {
	i := 0
	for i < len(s.aborted) && s.aborted[i].LastOffset < offset {
		i++
	}
	s.aborted = s.aborted[i:]
}

// Len is the number of producers known.
func (s *ProducerStates) Len() int { return len(s.entries) }

// Entry returns the entry of producerID, or nil. The entry must not be modified.
func (s *ProducerStates) Entry(producerID int64) *ProducerEntry { return s.entries[producerID] }

// Entries returns copies of every entry, by producer id.
func (s *ProducerStates) Entries() []ProducerEntry {
	out := make([]ProducerEntry, 0, len(s.entries))
	for _, id := range slices.Sorted(maps.Keys(s.entries)) {
		e := *s.entries[id]
		e.Batches = slices.Clone(e.Batches)
		out = append(out, e)
	}
	return out
}

// lastSequenceOf is the sequence number of a batch's last record: base plus
// lastOffsetDelta, wrapping from 2^31-1 to 0 as Kafka's sequences do.
func lastSequenceOf(h segment.BatchHeader) int32 {
	return incrementSequence(h.BaseSequence, h.LastOffsetDelta)
}

func incrementSequence(seq, by int32) int32 {
	if seq > math.MaxInt32-by {
		return by - (math.MaxInt32 - seq) - 1
	}
	return seq + by
}

// inSequence reports whether next follows last (wrapping at 2^31-1).
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || next == 0 && last == math.MaxInt32
}

// checkProducerBatch applies Kafka's checks to an idempotent batch a client sends,
// against the producer's entry (nil when unknown). It returns the original batch when h
// repeats one of the retained batches (same epoch, same first and last sequence): the
// caller answers with that batch's offsets and writes nothing. Otherwise a lower epoch
// is ErrInvalidProducerEpoch; a new epoch must start at sequence 0 and the same epoch
// must continue at the last sequence + 1, else ErrOutOfOrderSequence. An unknown
// producer is accepted at any sequence (KAFKA-7190: the state may have been expired or
// cut with the log).
func checkProducerBatch(e *ProducerEntry, h segment.BatchHeader) (*ProducerBatch, error) {
	if e == nil {
		return nil, nil
	}
	if h.ProducerEpoch == e.ProducerEpoch {
		last := lastSequenceOf(h)
		for i := range e.Batches {
			if b := &e.Batches[i]; b.FirstSequence == h.BaseSequence && b.LastSequence == last {
				dup := *b
				return &dup, nil
			}
		}
	}
	switch {
	case h.ProducerEpoch < e.ProducerEpoch:
		return nil, fmt.Errorf("%w: producer %d sent epoch %d, the partition has epoch %d", ErrInvalidProducerEpoch,
			h.ProducerID, h.ProducerEpoch, e.ProducerEpoch)
	case h.ProducerEpoch > e.ProducerEpoch:
		if h.BaseSequence != 0 {
			return nil, fmt.Errorf("%w: producer %d's new epoch %d starts at sequence %d, not 0", ErrOutOfOrderSequence,
				h.ProducerID, h.ProducerEpoch, h.BaseSequence)
		}
	case len(e.Batches) == 0:
		// The epoch is known but no sequence (Kafka: a marker only): accept.
	case !inSequence(e.LastSequence(), h.BaseSequence):
		return nil, fmt.Errorf("%w: producer %d epoch %d sent sequence %d, expected %d", ErrOutOfOrderSequence,
			h.ProducerID, h.ProducerEpoch, h.BaseSequence, incrementSequence(e.LastSequence(), 1))
	}
	return nil, nil
}

// applyProducerBatch returns the entry after the appended batch h (with its final
// offsets): a new epoch starts an empty batch list; the list keeps the latest
// ProducerBatchesRetained. e is not modified (nil starts a new entry).
func applyProducerBatch(e *ProducerEntry, h segment.BatchHeader) *ProducerEntry {
	next := &ProducerEntry{ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, CoordinatorEpoch: -1}
	if e != nil {
		next.TxnOpen, next.TxnFirstOffset, next.CoordinatorEpoch = e.TxnOpen, e.TxnFirstOffset, e.CoordinatorEpoch
	}
	if h.Transactional() && !next.TxnOpen {
		next.TxnOpen, next.TxnFirstOffset = true, h.BaseOffset
	}
	if e != nil && e.ProducerEpoch == h.ProducerEpoch {
		keep := e.Batches
		if len(keep) >= ProducerBatchesRetained {
			keep = keep[len(keep)-ProducerBatchesRetained+1:]
		}
		next.Batches = make([]ProducerBatch, len(keep), ProducerBatchesRetained)
		copy(next.Batches, keep)
	}
	next.Batches = append(next.Batches, ProducerBatch{FirstSequence: h.BaseSequence, LastSequence: lastSequenceOf(h),
		FirstOffset: h.BaseOffset, LastOffset: h.LastOffset(), Timestamp: h.MaxTimestamp})
	next.LastTimestamp = h.MaxTimestamp
	return next
}

// Check checks one client batch as Kafka's leader does (see checkProducerBatch).
// Batches without a producer id pass. A transaction marker (a control batch the
// transaction coordinator has written) only needs an epoch at least the producer's.
func (s *ProducerStates) Check(h segment.BatchHeader) (*ProducerBatch, error) {
	if h.ProducerID < 0 {
		return nil, nil
	}
	if h.Control() {
		return nil, checkMarker(s.entries[h.ProducerID], h)
	}
	return checkProducerBatch(s.entries[h.ProducerID], h)
}

// checkMarker refuses a transaction marker of an epoch older than the producer's
// (Kafka's InvalidProducerEpochException for markers), and one written by a
// transaction coordinator older than the one that wrote the producer's last marker
// here (Kafka's TransactionCoordinatorFencedException: a deposed coordinator's late
// marker).
func checkMarker(e *ProducerEntry, h segment.BatchHeader) error {
	if e == nil {
		return nil
	}
	if h.ProducerEpoch < e.ProducerEpoch {
		return fmt.Errorf("%w: a marker of producer %d has epoch %d, the partition has epoch %d", ErrInvalidProducerEpoch,
			h.ProducerID, h.ProducerEpoch, e.ProducerEpoch)
	}
	if h.ControlCoordinatorEpoch < e.CoordinatorEpoch {
		return fmt.Errorf("%w: a marker of producer %d has coordinator epoch %d, the partition has seen %d",
			ErrTransactionCoordinatorFenced, h.ProducerID, h.ControlCoordinatorEpoch, e.CoordinatorEpoch)
	}
	return nil
}

// applyMarker returns the entry after a transaction marker: a newer epoch (the
// coordinator fenced the producer) replaces the entry with one that knows only the
// epoch, so the fenced producer's batches are refused and the new one starts at
// sequence 0.
func applyMarker(e *ProducerEntry, h segment.BatchHeader) *ProducerEntry {
	if e != nil && e.ProducerEpoch >= h.ProducerEpoch {
		next := *e
		next.LastTimestamp = max(e.LastTimestamp, h.MaxTimestamp)
		next.TxnOpen, next.TxnFirstOffset = false, 0
		next.CoordinatorEpoch = max(e.CoordinatorEpoch, h.ControlCoordinatorEpoch)
		return &next
	}
	return &ProducerEntry{ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, LastTimestamp: h.MaxTimestamp,
		CoordinatorEpoch: h.ControlCoordinatorEpoch}
}

// Update records an appended batch (with its final offsets); batches without a
// producer id change nothing. Followers and recovery call it for every batch they
// append or replay, so that every replica holds the same state.
func (s *ProducerStates) Update(h segment.BatchHeader) {
	if h.ProducerID < 0 {
		return
	}
	e := s.entries[h.ProducerID]
	if h.Control() {
		if e != nil && e.TxnOpen && h.ControlType != 1 {
			s.aborted = append(s.aborted, AbortedTxn{ProducerID: h.ProducerID, FirstOffset: e.TxnFirstOffset,
				LastOffset: h.BaseOffset, LastStableOffset: s.stableAfter(h.ProducerID, h.BaseOffset)})
		}
		e = applyMarker(e, h)
	} else {
		e = applyProducerBatch(e, h)
	}
	if s.entries == nil {
		s.entries = map[int64]*ProducerEntry{}
	}
	s.entries[h.ProducerID] = e
	s.noteOpen(e)
}

// stableAfter is the last stable offset once producer's transaction ends with a marker
// at offset: the first offset of the oldest other ongoing transaction, else the offset
// after the marker (Kafka's ProducerStateManager.lastStableOffset of a completed
// transaction, the .txnindex field).
func (s *ProducerStates) stableAfter(producer, offset int64) int64 {
	lso := offset + 1
	for id, first := range s.open {
		if id != producer {
			lso = min(lso, first)
		}
	}
	return lso
}

// noteOpen keeps open in step with e.
func (s *ProducerStates) noteOpen(e *ProducerEntry) {
	if e.TxnOpen {
		if s.open == nil {
			s.open = map[int64]int64{}
		}
		s.open[e.ProducerID] = e.TxnFirstOffset
	} else {
		delete(s.open, e.ProducerID)
	}
}

// UpdateAll records every batch in records, a buffer of whole stamped batches, and
// returns how many there were.
func (s *ProducerStates) UpdateAll(records []byte) int {
	n := 0
	for pos := 0; pos < len(records); n++ {
		h, err := segment.ParseBatchHeader(records[pos:])
		if err != nil {
			return n
		}
		s.Update(h)
		pos += int(h.Size())
	}
	return n
}

// ExpireProducers removes producers whose last batch's timestamp is at least
// expirationMs before nowMs (producer.id.expiration.ms) and returns how many.
func (s *ProducerStates) ExpireProducers(nowMs, expirationMs int64) int {
	n := 0
	for id, e := range s.entries {
		if nowMs-e.LastTimestamp >= expirationMs && !e.TxnOpen { // never while a transaction is open
			delete(s.entries, id)
			n++
		}
	}
	return n
}

// clone copies the map; entries are immutable once stored and are shared.
func (s *ProducerStates) clone() *ProducerStates {
	return &ProducerStates{entries: maps.Clone(s.entries), open: maps.Clone(s.open), aborted: slices.Clone(s.aborted)}
}
