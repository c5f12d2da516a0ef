// Package txn is Kafka's transaction coordinator as a pure state machine.
//
// A Shard holds the transactional ids whose coordinator partition is one partition of
// __transaction_state. Like group.Shard it never does I/O, never starts goroutines and
// never reads a clock: the time is an argument of every call, and what a call wants
// done — records to write, responses to deliver, timers — comes back as Effects, which
// the caller (the coordinator runtime, through coordinator/transactions.go) carries out.
//
// Concurrency: a Shard is not safe for concurrent use; the runtime calls it from one
// goroutine at a time (methods, Replay and Committed callbacks alike).
package txn

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config holds Kafka's transaction coordinator settings; DefaultConfig gives Kafka's
// defaults.
type Config struct {
	// MaxTimeout is transaction.max.timeout.ms (900000): a longer
	// transaction.timeout.ms gets INVALID_TRANSACTION_TIMEOUT.
	MaxTimeout time.Duration
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{MaxTimeout: 15 * time.Minute}
}

// Record is one __transaction_state record in Kafka's key and value schemas (see
// records.go). A nil Value is a tombstone.
type Record struct {
	Key, Value []byte
}

// Reply is a response ready to be sent: Send(Response) delivers it to the request that
// waits for it.
type Reply struct {
	Send     func(kmsg.Response)
	Response kmsg.Response
}

// Effects is what a call asks the runtime to do, in this order:
//  1. append Records as one batch with acks=all semantics, if there are any;
//  2. when the write is over, call Committed with its outcome — 0 once the high
//     watermark passed the batch, else a Kafka error code translated for coordinators;
//     Committed may change the responses in Replies (they are pointers) and returns
//     further Effects, carried out the same way;
//  3. deliver Replies: after the write and Committed when there are Records, at once
//     otherwise.
//
// TimedOut, when set, answers instead of Committed when the write is not committed
// within the write timeout (COORDINATOR_NOT_AVAILABLE, as Kafka's
// TransactionStateManager translates REQUEST_TIMED_OUT); Replies are delivered after
// it, and Committed follows once the write's fate is known — 0 if the record landed
// after all, which applies it as a load would.
//
// Each of Markers asks the runtime to write one transaction's markers and to call its
// Done on the shard's goroutine once every partition has its marker.
type Effects struct {
	Records   []Record
	Committed func(errorCode int16) Effects
	TimedOut  func(errorCode int16) Effects
	Replies   []Reply
	Markers   []*Markers
}

// Markers is the end of a transaction to be marked in each of its partitions: a
// control batch (COMMIT or ABORT) with the producer id and epoch, written by the
// partitions' leaders (WriteTxnMarkers). Markers are idempotent, so Done may ask for
// them again.
type Markers struct {
	TransactionalID  string
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
	// TransactionVersion is sent in WriteTxnMarkers v2 (KIP-1228): 2 for a transaction
	// of a Transactions V2 client, whose markers carry the bumped epoch; 0 otherwise.
	TransactionVersion int8
	Partitions         []TopicPartition
	// Backoff is how long to wait before writing them: markers asked for again after
	// the completion's append failed wait, so that a partition refusing writes does
	// not have a marker appended to every partition of the transaction in a loop.
	Backoff time.Duration
	// Done completes the transaction (CompleteCommit or CompleteAbort).
	Done func(now time.Time) Effects
}

// PartitionFor returns the __transaction_state partition of transactionalID, as Kafka
// computes it: abs(Java String.hashCode) modulo the partition count.
func PartitionFor(transactionalID string, partitions int32) int32 {
	if partitions <= 0 {
		return 0
	}
	var h int32
	for _, r := range transactionalID {
		if r >= 0x10000 { // a UTF-16 surrogate pair, as Java's hashCode sees it
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	if h == -1<<31 {
		return 0 // Kafka's Utils.abs maps Integer.MIN_VALUE to 0
	}
	if h < 0 {
		h = -h
	}
	return h % partitions
}
