package txn

import (
	"maps"
	"slices"
	"time"
)

// State is a transaction's state, numbered as Kafka's TransactionState (the
// transaction_status byte of TransactionLogValue).
type State int8

// Kafka's transaction states.
const (
	StateEmpty State = iota
	StateOngoing
	StatePrepareCommit
	StatePrepareAbort
	StateCompleteCommit
	StateCompleteAbort
	StateDead
	StatePrepareEpochFence
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// String returns Kafka's name of the state (as DescribeTransactions reports it).
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// KnownState reports whether name is the name of one of Kafka's states.
func KnownState(name string) bool { return slices.Contains(stateNames[:], name) }

// valid reports whether s is one of Kafka's states.
func (s State) valid() bool { return s >= 0 && int(s) < len(stateNames) }

// noProducerEpoch is RecordBatch.NO_PRODUCER_EPOCH.
const noProducerEpoch = -1

// epochExhausted reports whether a producer epoch can no longer be bumped: Kafka
// rotates the producer id at Short.MAX_VALUE - 1.
func epochExhausted(epoch int16) bool { return epoch >= 1<<15-2 }

// TopicPartition names a partition in a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Transaction is the coordinator's metadata of one transactional id (Kafka's
// TransactionMetadata).
type Transaction struct {
	ID                string
	ProducerID        int64
	LastProducerID    int64 // the id before a rotation (-1 if none): KIP-360 retries
	ProducerEpoch     int16
	LastProducerEpoch int16 // the epoch before the last bump (-1 if none): KIP-360 retries
	Timeout           time.Duration
	State             State
	Partitions        map[TopicPartition]struct{}
	StartTime         time.Time // when the current transaction started (Ongoing)
	LastUpdate        time.Time
	// ClientTV2 says the transaction was last driven by a Transactions V2 client
	// (KIP-890 part 2: EndTxn v5, implicit adds): TransactionLogValue's
	// ClientTransactionVersion 2 (tv2.go).
	ClientTV2 bool
	// NextProducerID is the producer id a TV2 end hands out because the epoch is
	// exhausted (-1 if none): the prepared transaction keeps its id, its completion
	// switches to NextProducerID at epoch 0.
	NextProducerID int64

	// pending is the transition being written; requests meanwhile get
	// CONCURRENT_TRANSACTIONS, except AddPartitions calls, which wait in queued (at most
	// maxQueued) and run again once the write is over.
	pending *Transaction
	queued  []func(now time.Time) Effects
	// stalled says the pending write timed out (answered, waiting to land): nothing
	// queues behind it any more.
	stalled bool
}

// maxQueued bounds the AddPartitions calls waiting for one transaction's pending write.
const maxQueued = 16

// clone returns a copy of t that shares nothing with it, without a pending transition.
func (t *Transaction) clone() *Transaction {
	c := *t
	c.Partitions = maps.Clone(t.Partitions)
	if c.Partitions == nil {
		c.Partitions = map[TopicPartition]struct{}{}
	}
	c.pending, c.queued, c.stalled = nil, nil, false
	return &c
}

// SortedPartitions returns the transaction's partitions by topic, then partition.
func (t *Transaction) SortedPartitions() []TopicPartition {
	out := slices.Collect(maps.Keys(t.Partitions))
	slices.SortFunc(out, func(a, b TopicPartition) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	return out
}

// Shard is the transaction state of one __transaction_state partition.
type Shard struct {
	cfg              Config
	coordinatorEpoch int32
	txns             map[string]*Transaction
}

// NewShard returns an empty shard for a partition loaded in coordinatorEpoch (its
// leader epoch, which the markers carry).
func NewShard(cfg Config, coordinatorEpoch int32) *Shard {
	if cfg.MaxTimeout <= 0 {
		cfg.MaxTimeout = DefaultConfig().MaxTimeout
	}
	return &Shard{cfg: cfg, coordinatorEpoch: coordinatorEpoch, txns: map[string]*Transaction{}}
}

// Transaction returns a copy of the committed metadata of id, or false.
func (s *Shard) Transaction(id string) (Transaction, bool) {
	t, ok := s.txns[id]
	if !ok {
		return Transaction{}, false
	}
	return *t.clone(), true
}

// IDs returns the transactional ids of the shard, sorted.
func (s *Shard) IDs() []string {
	return slices.Sorted(maps.Keys(s.txns))
}

// Replay applies one record read while loading; a tombstone removes the id.
func (s *Shard) Replay(key, value []byte) error {
	id, err := decodeKey(key)
	if err != nil {
		return err
	}
	if value == nil {
		delete(s.txns, id)
		return nil
	}
	t, err := decodeValue(id, value)
	if err != nil {
		return err
	}
	if old, ok := s.txns[id]; ok && old.ProducerID == t.ProducerID {
		if old.ProducerEpoch != t.ProducerEpoch {
			t.LastProducerEpoch = old.ProducerEpoch
		} else {
			t.LastProducerEpoch = old.LastProducerEpoch // a transition at the same epoch
		}
	}
	s.txns[id] = t
	return nil
}

// write records the transition next of t (held in the shard) and calls done with the
// outcome once it is committed; on success next becomes the committed state, on failure
// t stays as it was. Requests for the id meanwhile get CONCURRENT_TRANSACTIONS. A write
// not committed within the write timeout is answered then (done with
// COORDINATOR_NOT_AVAILABLE) but stays pending, as Kafka keeps the pending state on
// that error: if it lands, next becomes the committed state then, and a prepared
// transaction gets its markers, as a load would resume it.
func (s *Shard) write(now time.Time, t, next *Transaction, done func(code int16) Effects) Effects {
	return s.writeAnswering(now, t, next, done, done)
}

// writeAnswering is write whose answer at the write timeout is timedOut rather than
// done; done still gets every other outcome.
func (s *Shard) writeAnswering(now time.Time, t, next *Transaction, done, timedOut func(code int16) Effects) Effects {
	next.LastUpdate = now
	t.pending = next
	answered := false
	return Effects{
		Records: []Record{{Key: encodeKey(next.ID), Value: encodeValue(next)}},
		Committed: func(code int16) Effects {
			if s.txns[next.ID] != t {
				if answered {
					return Effects{}
				}
				return done(code) // replaced meanwhile (cannot happen while pending)
			}
			t.pending, t.stalled = nil, false
			queued := t.queued
			t.queued = nil
			if code == 0 {
				s.txns[next.ID] = next.clone()
			}
			var out Effects
			switch {
			case !answered:
				out = done(code)
			case code == 0 && (next.State == StatePrepareCommit || next.State == StatePrepareAbort):
				out = Effects{Markers: []*Markers{s.markers(next.ID)}}
			}
			for _, call := range queued {
				out = merge(out, call(now))
			}
			return out
		},
		TimedOut: func(code int16) Effects {
			answered = true
			out := timedOut(code)
			if s.txns[next.ID] != t {
				return out
			}
			// The calls queued behind the write get CONCURRENT_TRANSACTIONS now
			// (retriable) rather than wait for it to land.
			t.stalled = true
			queued := t.queued
			t.queued = nil
			for _, call := range queued {
				out = merge(out, call(now))
			}
			return out
		},
	}
}
