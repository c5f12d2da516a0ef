package broker

// The transaction coordinator's glue: one coordinator.Runtime for __transaction_state,
// whose shards are txn.Shards, loaded and unloaded by the reconciler exactly like the
// group coordinator's (groups.go). Effects become runtime Results; Markers are handed
// to writeMarkers; a runtime timer aborts timed-out transactions every
// transaction.abort.timed.out.transaction.cleanup.interval.ms, and another removes
// transactional ids idle for transactional.id.expiration.ms every
// transaction.remove.expired.transaction.cleanup.interval.ms.

import (
	"time"

	"github.com/petrel-broker/petrel/coordinator"
	"github.com/petrel-broker/petrel/txn"
)

// abortTimedOutTimer is the runtime timer key of the periodic AbortTimedOut.
const abortTimedOutTimer = "petrel/abort-timed-out"

// removeExpiredTimer is the runtime timer key of the periodic RemoveExpired.
const removeExpiredTimer = "petrel/remove-expired-ids"

// txnCoordinator runs the __transaction_state partitions this broker leads.
type txnCoordinator struct {
	*shardRouter[*txn.Shard, txn.Effects]
	cfg           txn.Config
	abortInterval time.Duration
	// idExpiration is transactional.id.expiration.ms, checked every expireInterval.
	idExpiration, expireInterval time.Duration
	// peers are the kept connections to the other brokers (verification, markers).
	peers *peerClients
}

// close unloads every partition and closes the peer connections.
func (tc *txnCoordinator) close() {
	tc.shardRouter.close()
	tc.peers.close()
}

func newTxnCoordinator(b *Broker) *txnCoordinator {
	c := &b.cfg
	cfg := txn.DefaultConfig()
	cfg.MaxTimeout = c.durationMs("transaction.max.timeout.ms")
	tc := &txnCoordinator{cfg: cfg, peers: newPeerClients(b),
		abortInterval:  c.durationMs("transaction.abort.timed.out.transaction.cleanup.interval.ms"),
		idExpiration:   c.durationMs("transactional.id.expiration.ms"),
		expireInterval: c.durationMs("transaction.remove.expired.transaction.cleanup.interval.ms")}
	tc.shardRouter = &shardRouter[*txn.Shard, txn.Effects]{b: b, topic: transactionStateTopic,
		rt: coordinator.New(coordinator.Config{
			Name:          transactionStateTopic,
			WriteTimeout:  c.durationMs("offsets.commit.timeout.ms"),
			LoadReadBytes: int(c.int64Value("offsets.load.buffer.size")),
			Logger:        b.logger.Named("txn-coordinator"),
		}),
		partitionOf: txn.PartitionFor,
		newShard: func(partition, leaderEpoch int32) coordinator.Shard {
			return &txnShard{tc: tc, partition: partition, s: txn.NewShard(tc.cfg, leaderEpoch)}
		},
		unwrap: func(s coordinator.Shard) (*txn.Shard, func(txn.Effects) coordinator.Result) {
			ts := s.(*txnShard)
			return ts.s, ts.convert
		},
	}
	return tc
}

// txnShard adapts a txn.Shard to the runtime.
type txnShard struct {
	tc        *txnCoordinator
	partition int32
	s         *txn.Shard
}

func (t *txnShard) Replay(key, value []byte) error { return t.s.Replay(key, value) }

func (t *txnShard) Loaded(now time.Time) coordinator.Result {
	res := t.convert(txn.Effects{Markers: t.s.Loaded(now)})
	res.Timers = append(res.Timers, t.abortTimer(now), t.expireTimer(now))
	return res
}

// expireTimer runs RemoveExpired every
// transaction.remove.expired.transaction.cleanup.interval.ms.
func (t *txnShard) expireTimer(now time.Time) coordinator.Timer {
	return coordinator.Timer{Key: removeExpiredTimer, At: now.Add(t.tc.expireInterval),
		Fire: func(now time.Time, s coordinator.Shard) coordinator.Result {
			ts := s.(*txnShard)
			res := ts.convert(ts.s.RemoveExpired(now, ts.tc.idExpiration))
			res.Timers = append(res.Timers, ts.expireTimer(now))
			return res
		}}
}

func (t *txnShard) Unloaded(time.Time) coordinator.Result { return coordinator.Result{} }

// abortTimer runs AbortTimedOut every
// transaction.abort.timed.out.transaction.cleanup.interval.ms, and another removes
// transactional ids idle for transactional.id.expiration.ms every
// transaction.remove.expired.transaction.cleanup.interval.ms.
func (t *txnShard) abortTimer(now time.Time) coordinator.Timer {
	return coordinator.Timer{Key: abortTimedOutTimer, At: now.Add(t.tc.abortInterval),
		Fire: func(now time.Time, s coordinator.Shard) coordinator.Result {
			ts := s.(*txnShard)
			res := ts.convert(ts.s.AbortTimedOut(now))
			res.Timers = append(res.Timers, ts.abortTimer(now))
			return res
		}}
}

// convert turns Effects into a runtime Result: records written, Committed with the
// outcome, then the replies and the markers.
func (t *txnShard) convert(eff txn.Effects) coordinator.Result {
	var res coordinator.Result
	for _, r := range eff.Records {
		res.Records = append(res.Records, coordinator.Record{Key: r.Key, Value: r.Value})
	}
	if eff.Committed == nil && len(eff.Replies) == 0 && len(eff.Markers) == 0 {
		return res
	}
	// The replies and markers go once: after TimedOut when the write times out, else
	// after Committed (which, after a timeout, only applies what landed).
	answered := false
	reply := func() {
		if answered {
			return
		}
		answered = true
		for _, r := range eff.Replies {
			if r.Send != nil {
				r.Send(r.Response)
			}
		}
		for _, m := range eff.Markers {
			t.tc.writeMarkers(t.partition, m)
		}
	}
	// then answers the write's fate: the shard's follow-up (Committed or TimedOut)
	// converted, after the replies are sent.
	then := func(follow func(int16) txn.Effects) func(time.Time, int16) coordinator.Result {
		return func(_ time.Time, code int16) coordinator.Result {
			var next coordinator.Result
			if follow != nil {
				next = t.convert(follow(code))
			}
			reply()
			return next
		}
	}
	res.Committed = then(eff.Committed)
	if len(res.Records) > 0 {
		res.TimedOut = then(eff.TimedOut)
	}
	return res
}
