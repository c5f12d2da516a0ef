package coordinator

import (
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/segment"
)

// Log is what the runtime needs of a partition replica; *replication.Partition has it.
type Log interface {
	// AppendAsLeaderInEpoch appends only while the replica leads in leaderEpoch (a stale
	// executor's write is refused: ErrFencedLeaderEpoch).
	AppendAsLeaderInEpoch(records []byte, leaderEpoch int32, minInsync int) (segment.AppendInfo, error)
	// AppendTransactionalAsCoordinator is AppendAsLeaderInEpoch for a transactional
	// batch of a producer (Result.Producer): the producer's epoch is checked, not its
	// sequence, and with verify the batch must belong to a transaction open there or
	// be covered by guard (KIP-890).
	AppendTransactionalAsCoordinator(records []byte, leaderEpoch int32, minInsync int, verify bool, guard *replication.TxnVerification) (segment.AppendInfo, error)
	// AppendMarkerAsLeaderInEpoch is AppendAsLeaderInEpoch for a transaction marker:
	// with transactionVersion 2 its epoch must be newer than the producer's (KIP-1228).
	AppendMarkerAsLeaderInEpoch(records []byte, leaderEpoch int32, minInsync int, transactionVersion int8) (segment.AppendInfo, error)
	Read(offset int64, maxBytes int, currentLeaderEpoch int32, scope replication.ReplicaScope) (replication.FetchResult, error)
	State() replication.State
	Watch(w *replication.Waiter)
	Unwatch(w *replication.Waiter)
}

// Shard is the state of one partition of the internal topic. The runtime calls it from
// the partition's executor only, never concurrently.
type Shard interface {
	// Replay applies one record read while loading, in offset order. An error is logged
	// and the record skipped (Kafka skips records it cannot decode).
	Replay(key, value []byte) error
	// Loaded is called once after the last Replay, before any Op.
	Loaded(now time.Time) Result
	// Unloaded is called when the partition is unloaded after Loaded: it answers what
	// waits (NOT_COORDINATOR). Records in its Result are dropped and its Committed
	// callbacks get NOT_COORDINATOR.
	Unloaded(now time.Time) Result
}

// TransactionalShard is a Shard whose partition holds transactional batches and
// transaction markers (__consumer_offsets, where TxnOffsetCommit writes). While loading,
// the runtime calls ReplayRecord instead of Replay for every record, with its offset and
// batch, and ReplayMarker for every transaction marker, in log order; a marker the
// runtime writes itself (Result.Marker) is replayed with ReplayMarker once committed,
// before its Committed, so that the live state and a later load agree. A Shard that is
// not a TransactionalShard never meets either: its loads skip markers (and
// transactional batches, which its partition cannot hold).
type TransactionalShard interface {
	Shard
	ReplayRecord(offset int64, batch BatchInfo, key, value []byte) error
	ReplayMarker(m Marker) error
}

// Producer makes a write one transactional batch of a producer's transaction.
type Producer struct {
	ID    int64
	Epoch int16
	// Verify applies KIP-890's check (transaction.partition.verification.enable):
	// the partition accepts the batch only in a transaction already open there at
	// Epoch, or with Guard, obtained from the partition and verified with the
	// transaction coordinator before the op was submitted.
	Verify bool
	Guard  *replication.TxnVerification
}

// MarkerWrite asks for a transaction marker (control batch) of a producer.
type MarkerWrite struct {
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
	// TransactionVersion is WriteTxnMarkers v2's (KIP-1228): 2 for a Transactions V2
	// transaction, whose marker must carry an epoch newer than the producer's.
	TransactionVersion int8
}

// Op is work run on a partition's executor with its shard.
type Op func(now time.Time, s Shard) Result

// Timer asks for Fire to run on the executor at or after At. A Timer with the Key of a
// pending one replaces it; a zero At cancels the pending one. Timers die with the load.
type Timer struct {
	Key  string
	At   time.Time
	Fire Op
}

// Result is what an Op asks the runtime to do: set Timers at once, append Records as
// one batch with acks=all semantics, and call Committed once the write's fate in the
// log is known — with 0 once the high watermark passed the batch, else a translated
// Kafka error code: the append failed (the batch is not in the log) or the partition
// was unloaded first (NOT_COORDINATOR; the next leader's load decides). Without
// Records, Committed (if set) is called at once with 0. Committed's Result is carried
// out the same way.
//
// TimedOut answers early: it is called with COORDINATOR_NOT_AVAILABLE (Kafka's
// translation of REQUEST_TIMED_OUT and NOT_ENOUGH_REPLICAS_AFTER_APPEND) when the high
// watermark has not passed the batch within Config.WriteTimeout, or passed it with the
// ISR below min.insync.replicas. The write stays pending: Committed still follows, with
// 0 if the batch lands, after every earlier write's Committed and before every later
// one's, so the live state applies what a load would replay. A Result without TimedOut
// is answered by Committed alone.
//
// With Producer, Records are written as one transactional batch of that producer. With
// Marker (and no Records), a transaction marker is written instead, with the checks the
// partition applies to any marker (INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED).
type Result struct {
	Timers    []Timer
	Records   []Record
	Committed func(now time.Time, errorCode int16) Result
	TimedOut  func(now time.Time, errorCode int16) Result
	Producer  *Producer
	Marker    *MarkerWrite
}

// Config configures a Runtime.
type Config struct {
	// Name is the internal topic, for logs.
	Name string
	// WriteTimeout bounds the wait for the high watermark before a write is answered
	// (offsets.commit.timeout.ms, 5000): a write not committed by then gets its
	// TimedOut (COORDINATOR_NOT_AVAILABLE), and its Committed when it lands.
	WriteTimeout time.Duration
	// LoadReadBytes is the size of each read while loading (default 1 MiB).
	LoadReadBytes int
	// MaxTimedOutWrites bounds, per partition, the writes answered at their timeout
	// that are still pending (the high watermark stands still): past it a new write is
	// refused without being appended, as a failed append (COORDINATOR_NOT_AVAILABLE,
	// applied nowhere), until the held writes land or the partition is unloaded. So
	// pending holds at most the writes of one WriteTimeout plus these (default 1024).
	MaxTimedOutWrites int
	Logger            hclog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Runtime runs the loaded partitions of one internal topic.
type Runtime struct {
	cfg Config

	mu        sync.Mutex
	executors map[int32]*executor // guarded by mu
	closed    bool
	wg        sync.WaitGroup
}

// New returns a runtime with no partition loaded.
func New(cfg Config) *Runtime {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 5 * time.Second
	}
	if cfg.LoadReadBytes <= 0 {
		cfg.LoadReadBytes = 1 << 20
	}
	if cfg.MaxTimedOutWrites <= 0 {
		cfg.MaxTimedOutWrites = 1024
	}
	return &Runtime{cfg: cfg, executors: map[int32]*executor{}}
}

// LoadSpec names a partition this broker now leads.
type LoadSpec struct {
	Partition   int32
	LeaderEpoch int32
	Log         Log
	// MinInsync is the min.insync.replicas the runtime's appends require (read at each
	// append); nil means 1.
	MinInsync func() int
	Shard     Shard
}

// Load starts loading a partition this broker leads in spec.LeaderEpoch. A partition
// already loaded in the same epoch is left alone (false); one loaded in another epoch
// is unloaded first.
func (r *Runtime) Load(spec LoadSpec) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	if old := r.executors[spec.Partition]; old != nil {
		if old.epoch == spec.LeaderEpoch {
			return false
		}
		old.stopAsync()
	}
	if spec.MinInsync == nil {
		spec.MinInsync = func() int { return 1 }
	}
	e := newExecutor(r, spec)
	r.executors[spec.Partition] = e
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		e.run()
	}()
	return true
}

// Unload stops serving partition (leadership lost or the replica removed): pending
// writes and queued ops fail with NOT_COORDINATOR, timers are cancelled. It does not
// wait for the executor to finish.
func (r *Runtime) Unload(partition int32) {
	r.mu.Lock()
	e := r.executors[partition]
	delete(r.executors, partition)
	r.mu.Unlock()
	if e != nil {
		e.stopAsync()
	}
}

// Loaded reports the partitions loaded here and their leader epochs, being loaded or
// serving.
func (r *Runtime) Loaded() map[int32]int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[int32]int32, len(r.executors))
	for p, e := range r.executors {
		out[p] = e.epoch
	}
	return out
}

// Serving returns the partitions that are loaded and serving, in order.
func (r *Runtime) Serving() []int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int32
	for p, e := range r.executors {
		if e.currentState() == stateServing {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// Submit queues op on partition's executor. It fails at once with ErrNotCoordinator
// (not loaded here), ErrLoadInProgress or ErrClosed. When the partition is unloaded
// before op runs, fail (if not nil) is called with ErrNotCoordinator instead, on some
// goroutine.
func (r *Runtime) Submit(partition int32, op Op, fail func(error)) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ErrClosed
	}
	e := r.executors[partition]
	r.mu.Unlock()
	if e == nil {
		return ErrNotCoordinator
	}
	return e.submit(task{op: op, fail: fail})
}

// Close unloads every partition and waits for the executors to finish.
func (r *Runtime) Close() {
	r.mu.Lock()
	r.closed = true
	executors := r.executors
	r.executors = map[int32]*executor{}
	r.mu.Unlock()
	for _, e := range executors {
		e.stopAsync()
	}
	r.wg.Wait()
}

// translateAppendError maps an append failure to the code a coordinator answers, as
// Kafka does.
func translateAppendError(err error) int16 {
	switch {
	case errors.Is(err, replication.ErrNotEnoughReplicas), errors.Is(err, errTooManyTimedOut):
		return codeCoordinatorNotAvailable
	case errors.Is(err, replication.ErrNotLeader), errors.Is(err, replication.ErrPartitionStopped),
		errors.Is(err, replication.ErrFencedLeaderEpoch), errors.Is(err, replication.ErrUnknownLeaderEpoch),
		errors.Is(err, segment.ErrLogFailed),
		errors.Is(err, segment.ErrClosed):
		return codeNotCoordinator
	case errors.Is(err, replication.ErrInvalidProducerEpoch):
		return codeInvalidProducerEpoch
	case errors.Is(err, replication.ErrInvalidTxnState):
		return codeInvalidTxnState
	case errors.Is(err, replication.ErrTransactionCoordinatorFenced):
		return codeTransactionCoordinatorFenced
	}
	return codeUnknownServerError
}
