package broker

// The glue every coordinator on a coordinator.Runtime shares (groups.go for
// __consumer_offsets, transactions.go for __transaction_state): load and unload the
// internal topic's partitions as this broker gains and loses their leadership, route a
// key (group id, transactional id) to its partition's shard, and answer a request
// through a RespondLater channel.

import (
	"sync"
	"time"

	"github.com/petrel-broker/petrel/coordinator"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shardRouter runs the partitions of one internal topic that this broker leads, whose
// shards wrap a pure state machine S answering calls with effects E.
type shardRouter[S, E any] struct {
	b     *Broker
	rt    *coordinator.Runtime
	topic string
	// partitionOf is Kafka's key → partition rule (abs(javaStringHashCode) % n).
	partitionOf func(key string, partitions int32) int32
	// newShard builds the runtime shard for a partition loaded in leaderEpoch.
	newShard func(partition, leaderEpoch int32) coordinator.Shard
	// unwrap returns a runtime shard's state machine and its effects converter.
	unwrap func(coordinator.Shard) (S, func(E) coordinator.Result)
}

// close unloads every partition; waiting requests get NOT_COORDINATOR.
func (r *shardRouter[S, E]) close() { r.rt.Close() }

// unload stops serving one partition (its replica is removed).
func (r *shardRouter[S, E]) unload(partition int32) { r.rt.Unload(partition) }

// reconcile loads the topic's partitions this broker leads (in the leader epoch of im)
// and unloads the others. The reconciler calls it after applying im.
func (r *shardRouter[S, E]) reconcile(im *metadata.Image) {
	self := r.b.cfg.NodeID
	t := im.Topic(r.topic)
	loaded := r.rt.Loaded()
	for p, epoch := range loaded {
		if t == nil || int(p) >= len(t.Partitions) || t.Partitions[p].Leader != self || t.Partitions[p].LeaderEpoch != epoch {
			r.rt.Unload(p)
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
		lp := r.b.partitions.get(r.topic, p.ID)
		if lp == nil {
			continue
		}
		r.rt.Load(coordinator.LoadSpec{
			Partition:   p.ID,
			LeaderEpoch: p.LeaderEpoch,
			Log:         lp.Partition,
			MinInsync: func() int {
				return replication.EffectiveMinISR(lp.settings.Load().minInsync, int(lp.replicationFactor.Load()))
			},
			Shard: r.newShard(p.ID, p.LeaderEpoch),
		})
	}
}

// partitionFor returns key's partition, or false when the topic does not exist.
func (r *shardRouter[S, E]) partitionFor(key string) (int32, bool) {
	t := r.b.Image().Topic(r.topic)
	if t == nil || len(t.Partitions) == 0 {
		return 0, false
	}
	return r.partitionOf(key, int32(len(t.Partitions))), true
}

// submit runs call on key's shard. When the partition is not served here it calls
// failed with the Kafka code (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS), at once or
// later (unloaded before the call ran).
func (r *shardRouter[S, E]) submit(key string, call func(now time.Time, s S) E, failed func(code int16)) {
	p, ok := r.partitionFor(key)
	if !ok {
		failed(kerr.NotCoordinator.Code)
		return
	}
	r.submitTo(p, call, failed)
}

// submitTo is submit for a known partition.
func (r *shardRouter[S, E]) submitTo(p int32, call func(now time.Time, s S) E, failed func(code int16)) {
	err := r.rt.Submit(p, func(now time.Time, s coordinator.Shard) coordinator.Result {
		inner, convert := r.unwrap(s)
		return convert(call(now, inner))
	}, func(err error) { failed(errorCode(err)) })
	if err != nil {
		failed(errorCode(err))
	}
}

// respond answers a request from key's shard: call delivers the response through send
// (now or later); failed builds the response for a refusal code.
func (r *shardRouter[S, E]) respond(key string, call func(now time.Time, s S, send func(kmsg.Response)) E,
	failed func(code int16) kmsg.Response) rpc.Result {
	ch := make(chan kmsg.Response, 1)
	var once sync.Once
	send := func(resp kmsg.Response) { once.Do(func() { ch <- resp }) }
	r.submit(key, func(now time.Time, s S) E { return call(now, s, send) },
		func(code int16) { send(failed(code)) })
	return rpc.RespondLater(ch)
}
