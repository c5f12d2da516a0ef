package coordinator

// The transaction coordinator: a Runtime for __transaction_state whose shards are
// txn.Shards, loaded and unloaded by the broker's reconciler exactly like the group
// coordinator's (groups.go). Effects become Results; Markers are written by
// writeMarkers (txn_markers.go); a runtime timer aborts timed-out transactions every
// transaction.abort.timed.out.transaction.cleanup.interval.ms, and another removes
// transactional ids idle for transactional.id.expiration.ms every
// transaction.remove.expired.transaction.cleanup.interval.ms.

import (
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/txn"
	"github.com/twmb/franz-go/pkg/kerr"
)

// abortTimedOutTimer is the runtime timer key of the periodic AbortTimedOut.
const abortTimedOutTimer = "petrel/abort-timed-out"

// removeExpiredTimer is the runtime timer key of the periodic RemoveExpired.
const removeExpiredTimer = "petrel/remove-expired-ids"

// TxnConfig configures a TxnCoordinator.
type TxnConfig struct {
	// Runtime configures the runtime (Name is the topic, __transaction_state).
	Runtime Config
	// Txn is the shards' configuration.
	Txn txn.Config
	// AbortInterval is transaction.abort.timed.out.transaction.cleanup.interval.ms.
	AbortInterval time.Duration
	// IDExpiration is transactional.id.expiration.ms, checked every ExpireInterval
	// (transaction.remove.expired.transaction.cleanup.interval.ms).
	IDExpiration, ExpireInterval time.Duration
	// Partitions returns __transaction_state's partition count now (0: no topic yet).
	Partitions func() int32
	// Net reaches the partitions' leaders for the markers.
	Net MarkerNet
}

// TxnCoordinator runs the __transaction_state partitions this broker leads.
type TxnCoordinator struct {
	*Router[*txn.Shard, txn.Effects]
	cfg    TxnConfig
	logger hclog.Logger
}

// NewTxnCoordinator returns a coordinator with nothing loaded.
func NewTxnCoordinator(cfg TxnConfig) *TxnCoordinator {
	tc := &TxnCoordinator{cfg: cfg, logger: cfg.Runtime.Logger}
	if tc.logger == nil {
		tc.logger = hclog.NewNullLogger()
	}
	tc.Router = &Router[*txn.Shard, txn.Effects]{
		rt:          New(cfg.Runtime),
		partitions:  cfg.Partitions,
		partitionOf: txn.PartitionFor,
		newShard: func(partition, leaderEpoch int32) Shard {
			return &txnStateShard{tc: tc, partition: partition, s: txn.NewShard(tc.cfg.Txn, leaderEpoch)}
		},
		unwrap: func(s Shard) (*txn.Shard, func(txn.Effects) Result) {
			ts := s.(*txnStateShard)
			return ts.s, ts.convert
		},
	}
	return tc
}

// txnStateShard adapts a txn.Shard to the runtime.
type txnStateShard struct {
	tc        *TxnCoordinator
	partition int32
	s         *txn.Shard
}

func (t *txnStateShard) Replay(key, value []byte) error { return t.s.Replay(key, value) }

func (t *txnStateShard) Loaded(now time.Time) Result {
	res := t.convert(txn.Effects{Markers: t.s.Loaded(now)})
	res.Timers = append(res.Timers, t.abortTimer(now), t.expireTimer(now))
	return res
}

// expireTimer runs RemoveExpired every
// transaction.remove.expired.transaction.cleanup.interval.ms.
func (t *txnStateShard) expireTimer(now time.Time) Timer {
	return periodic(removeExpiredTimer, t.tc.cfg.ExpireInterval, now, func(now time.Time, s Shard) Result {
		ts := s.(*txnStateShard)
		return ts.convert(ts.s.RemoveExpired(now, ts.tc.cfg.IDExpiration))
	})
}

func (t *txnStateShard) Unloaded(time.Time) Result { return Result{} }

// abortTimer runs AbortTimedOut every
// transaction.abort.timed.out.transaction.cleanup.interval.ms.
func (t *txnStateShard) abortTimer(now time.Time) Timer {
	return periodic(abortTimedOutTimer, t.tc.cfg.AbortInterval, now, func(now time.Time, s Shard) Result {
		ts := s.(*txnStateShard)
		return ts.convert(ts.s.AbortTimedOut(now))
	})
}

// convert turns Effects into a runtime Result: records written, Committed with the
// outcome, then the replies and the markers.
func (t *txnStateShard) convert(eff txn.Effects) Result {
	var res Result
	for _, r := range eff.Records {
		res.Records = append(res.Records, Record{Key: r.Key, Value: r.Value})
	}
	if eff.Committed == nil && len(eff.Replies) == 0 && len(eff.Markers) == 0 {
		return res
	}
	reply := onceReplies(func() {
		for _, r := range eff.Replies {
			if r.Send != nil {
				r.Send(r.Response)
			}
		}
		for _, m := range eff.Markers {
			t.tc.writeMarkers(t.partition, m)
		}
	})
	res.Committed = then(eff.Committed, t.convert, reply)
	if len(res.Records) > 0 {
		res.TimedOut = then(eff.TimedOut, t.convert, reply)
	}
	return res
}

// Server-side retries of CONCURRENT_TRANSACTIONS for adds: the previous transaction's
// markers are being written (a few ms) right after its EndTxn was answered, and a
// client would otherwise back off (kgo and the Java client 20 ms, librdkafka more).
const (
	addRetryBackoff = 2 * time.Millisecond
	addRetryMax     = 32 * time.Millisecond
)

// AddPartitions runs AddPartitions on id's shard and calls done once with the outcome,
// trying again after 2, 4, ... 32 ms while it is CONCURRENT_TRANSACTIONS.
func (tc *TxnCoordinator) AddPartitions(id string, pid int64, epoch int16, tps []txn.TopicPartition, done func(code int16)) {
	tc.addRetrying(id, func(now time.Time, s *txn.Shard, result func(code int16)) txn.Effects {
		return s.AddPartitions(now, id, pid, epoch, tps, result)
	}, done)
}

// AddPartitionsImplicit is AddPartitions for a Transactions V2 client's implicit add
// (txn.Shard.AddPartitionsImplicit).
func (tc *TxnCoordinator) AddPartitionsImplicit(id string, pid int64, epoch int16, tps []txn.TopicPartition, done func(code int16)) {
	tc.addRetrying(id, func(now time.Time, s *txn.Shard, result func(code int16)) txn.Effects {
		return s.AddPartitionsImplicit(now, id, pid, epoch, tps, result)
	}, done)
}

// addRetrying runs add on id's shard as AddPartitions does, retried while it answers
// CONCURRENT_TRANSACTIONS.
func (tc *TxnCoordinator) addRetrying(id string, add func(now time.Time, s *txn.Shard, result func(code int16)) txn.Effects, done func(code int16)) {
	retryConcurrent(func(result, failed func(code int16)) {
		tc.Submit(id, func(now time.Time, s *txn.Shard) txn.Effects { return add(now, s, result) }, failed)
	}, done)
}

// retryConcurrent calls attempt and done once with its outcome: attempt reports it
// through result, retried after 2, 4, ... 32 ms while it is CONCURRENT_TRANSACTIONS,
// or through failed, never retried (the shard was not reached).
func retryConcurrent(attempt func(result, failed func(code int16)), done func(code int16)) {
	var once sync.Once
	finish := func(code int16) { once.Do(func() { done(code) }) }
	var try func(wait time.Duration)
	try = func(wait time.Duration) {
		attempt(func(code int16) {
			if code != kerr.ConcurrentTransactions.Code || wait > addRetryMax {
				finish(code)
				return
			}
			time.AfterFunc(wait, func() { try(2 * wait) })
		}, finish)
	}
	try(addRetryBackoff)
}
