package broker

// The transaction coordinator's glue: one coordinator.Runtime for __transaction_state,
// whose shards are txn.Shards, loaded and unloaded by the reconciler exactly like the
// group coordinator's (groups.go). Effects become runtime Results; Markers are handed
// to writeMarkers; a runtime timer aborts timed-out transactions every
// transaction.abort.timed.out.transaction.cleanup.interval.ms.

import (
	"sync"
	"time"

	"github.com/petrel-broker/petrel/coordinator"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/petrel-broker/petrel/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// abortTimedOutTimer is the runtime timer key of the periodic AbortTimedOut.
const abortTimedOutTimer = "petrel/abort-timed-out"

// txnCoordinator runs the __transaction_state partitions this broker leads.
type txnCoordinator struct {
	b             *Broker
	rt            *coordinator.Runtime
	cfg           txn.Config
	abortInterval time.Duration
}

func newTxnCoordinator(b *Broker) *txnCoordinator {
	c := &b.cfg
	cfg := txn.DefaultConfig()
	cfg.MaxTimeout = c.durationMs("transaction.max.timeout.ms")
	return &txnCoordinator{b: b, cfg: cfg,
		abortInterval: c.durationMs("transaction.abort.timed.out.transaction.cleanup.interval.ms"),
		rt: coordinator.New(coordinator.Config{
			Name:          transactionStateTopic,
			WriteTimeout:  c.durationMs("offsets.commit.timeout.ms"),
			LoadReadBytes: int(c.int64Value("offsets.load.buffer.size")),
			Logger:        b.logger.Named("txn-coordinator"),
		})}
}

// close unloads every partition; waiting requests get NOT_COORDINATOR.
func (tc *txnCoordinator) close() { tc.rt.Close() }

// reconcile loads the __transaction_state partitions this broker leads (in the leader
// epoch of im) and unloads the others.
func (tc *txnCoordinator) reconcile(im *metadata.Image) {
	self := tc.b.cfg.NodeID
	t := im.Topic(transactionStateTopic)
	loaded := tc.rt.Loaded()
	for p, epoch := range loaded {
		if t == nil || int(p) >= len(t.Partitions) || t.Partitions[p].Leader != self || t.Partitions[p].LeaderEpoch != epoch {
			tc.rt.Unload(p)
		}
	}
	if t == nil {
		return
	}
	for _, p := range t.Partitions {
		if p.Leader != self {
			continue
		}
		if epoch, ok := loaded[p.ID]; ok && epoch == p.LeaderEpoch {
			continue
		}
		lp := tc.b.partitions.get(transactionStateTopic, p.ID)
		if lp == nil {
			continue
		}
		tc.rt.Load(coordinator.LoadSpec{
			Partition:   p.ID,
			LeaderEpoch: p.LeaderEpoch,
			Log:         lp.Partition,
			MinInsync: func() int {
				return min(lp.settings.Load().minInsync, int(lp.replicationFactor.Load()))
			},
			Shard: &txnShard{tc: tc, partition: p.ID, s: txn.NewShard(tc.cfg, p.LeaderEpoch)},
		})
	}
}

// unload stops serving one partition (its replica is removed).
func (tc *txnCoordinator) unload(partition int32) { tc.rt.Unload(partition) }

// partitionFor returns the __transaction_state partition of transactionalID, or false
// when the topic does not exist.
func (tc *txnCoordinator) partitionFor(transactionalID string) (int32, bool) {
	t := tc.b.Image().Topic(transactionStateTopic)
	if t == nil || len(t.Partitions) == 0 {
		return 0, false
	}
	return txn.PartitionFor(transactionalID, int32(len(t.Partitions))), true
}

// submit runs call on transactionalID's shard; when the partition is not served here
// failed gets the Kafka code (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS), at once
// or later.
func (tc *txnCoordinator) submit(transactionalID string, call func(now time.Time, s *txn.Shard) txn.Effects, failed func(code int16)) {
	p, ok := tc.partitionFor(transactionalID)
	if !ok {
		failed(kerr.NotCoordinator.Code)
		return
	}
	tc.submitTo(p, call, failed)
}

func (tc *txnCoordinator) submitTo(p int32, call func(now time.Time, s *txn.Shard) txn.Effects, failed func(code int16)) {
	err := tc.rt.Submit(p, func(now time.Time, s coordinator.Shard) coordinator.Result {
		ts := s.(*txnShard)
		return ts.convert(call(now, ts.s))
	}, func(err error) { failed(errorCode(err)) })
	if err != nil {
		failed(errorCode(err))
	}
}

// respond answers a request from transactionalID's shard: call delivers the response
// through send; failed builds the response for a refusal code.
func (tc *txnCoordinator) respond(transactionalID string, call func(now time.Time, s *txn.Shard, send func(kmsg.Response)) txn.Effects,
	failed func(code int16) kmsg.Response) rpc.Result {
	ch := make(chan kmsg.Response, 1)
	var once sync.Once
	send := func(resp kmsg.Response) { once.Do(func() { ch <- resp }) }
	tc.submit(transactionalID, func(now time.Time, s *txn.Shard) txn.Effects { return call(now, s, send) },
		func(code int16) { send(failed(code)) })
	return rpc.RespondLater(ch)
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
	res.Timers = append(res.Timers, t.abortTimer(now))
	return res
}

func (t *txnShard) Unloaded(time.Time) coordinator.Result { return coordinator.Result{} }

// abortTimer runs AbortTimedOut every
// transaction.abort.timed.out.transaction.cleanup.interval.ms.
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
	res.Committed = func(_ time.Time, code int16) coordinator.Result {
		var next coordinator.Result
		if eff.Committed != nil {
			next = t.convert(eff.Committed(code))
		}
		for _, r := range eff.Replies {
			if r.Send != nil {
				r.Send(r.Response)
			}
		}
		for _, m := range eff.Markers {
			t.tc.writeMarkers(t.partition, m)
		}
		return next
	}
	return res
}
