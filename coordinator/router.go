package coordinator

// The glue every coordinator on a Runtime shares (groups.go for __consumer_offsets,
// transactions.go for __transaction_state): load and unload the internal topic's
// partitions as this broker gains and loses their leadership, route a key (group id,
// transactional id) to its partition's shard, and answer a request through a channel
// the broker's handler returns.

import (
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Router runs the partitions of one internal topic that this broker leads, whose
// shards wrap a pure state machine S answering calls with effects E.
type Router[S, E any] struct {
	rt *Runtime
	// partitions is the internal topic's partition count now; 0 when it does not exist.
	partitions func() int32
	// partitionOf is Kafka's key → partition rule (abs(javaStringHashCode) % n).
	partitionOf func(key string, partitions int32) int32
	// newShard builds the runtime shard for a partition loaded in leaderEpoch.
	newShard func(partition, leaderEpoch int32) Shard
	// unwrap returns a runtime shard's state machine and its effects converter.
	unwrap func(Shard) (S, func(E) Result)
}

// ErrorCode is the Kafka code of an error of Runtime.Submit or of its fail callback.
func ErrorCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrNotCoordinator), errors.Is(err, ErrClosed):
		return kerr.NotCoordinator.Code
	case errors.Is(err, ErrLoadInProgress):
		return kerr.CoordinatorLoadInProgress.Code
	}
	return kerr.UnknownServerError.Code
}

// Close unloads every partition; waiting requests get NOT_COORDINATOR.
func (r *Router[S, E]) Close() { r.rt.Close() }

// Unload stops serving one partition (its replica is removed).
func (r *Router[S, E]) Unload(partition int32) { r.rt.Unload(partition) }

// Loaded returns the partitions loaded or loading, with their leader epochs.
func (r *Router[S, E]) Loaded() map[int32]int32 { return r.rt.Loaded() }

// Serving returns the partitions loaded and serving, in order.
func (r *Router[S, E]) Serving() []int32 { return r.rt.Serving() }

// Reconcile loads the partitions this broker leads (leading: partition → leader epoch)
// and unloads the others. spec gives the log of a partition to load (its Shard is
// built here); false leaves the partition for a later Reconcile (no replica yet). The
// broker's reconciler calls it after applying a metadata image.
func (r *Router[S, E]) Reconcile(leading map[int32]int32, spec func(partition int32) (LoadSpec, bool)) {
	loaded := r.rt.Loaded()
	for p, epoch := range loaded {
		if e, ok := leading[p]; !ok || e != epoch {
			r.rt.Unload(p)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(leading)) {
		epoch := leading[p]
		if e, ok := loaded[p]; ok && e == epoch {
			continue
		}
		s, ok := spec(p)
		if !ok {
			continue
		}
		s.Partition, s.LeaderEpoch, s.Shard = p, epoch, r.newShard(p, epoch)
		r.rt.Load(s)
	}
}

// PartitionFor returns key's partition, or false when the topic does not exist.
func (r *Router[S, E]) PartitionFor(key string) (int32, bool) {
	n := r.partitions()
	if n <= 0 {
		return 0, false
	}
	return r.partitionOf(key, n), true
}

// Submit runs call on key's shard. When the partition is not served here it calls
// failed with the Kafka code (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS), at once or
// later (unloaded before the call ran).
func (r *Router[S, E]) Submit(key string, call func(now time.Time, s S) E, failed func(code int16)) {
	p, ok := r.PartitionFor(key)
	if !ok {
		failed(kerr.NotCoordinator.Code)
		return
	}
	r.SubmitTo(p, call, failed)
}

// SubmitTo is Submit for a known partition.
func (r *Router[S, E]) SubmitTo(p int32, call func(now time.Time, s S) E, failed func(code int16)) {
	err := r.rt.Submit(p, func(now time.Time, s Shard) Result {
		inner, convert := r.unwrap(s)
		return convert(call(now, inner))
	}, func(err error) { failed(ErrorCode(err)) })
	if err != nil {
		failed(ErrorCode(err))
	}
}

// Respond answers a request from key's shard: call delivers the response through send
// (now or later); failed builds the response for a refusal code. The one response
// arrives on the returned channel.
func (r *Router[S, E]) Respond(key string, call func(now time.Time, s S, send func(kmsg.Response)) E,
	failed func(code int16) kmsg.Response) <-chan kmsg.Response {
	ch := make(chan kmsg.Response, 1)
	var once sync.Once
	send := func(resp kmsg.Response) { once.Do(func() { ch <- resp }) }
	r.Submit(key, func(now time.Time, s S) E { return call(now, s, send) },
		func(code int16) { send(failed(code)) })
	return ch
}

// Gather runs one call per item (each on its key's shard) and answers with build once
// every item has its result, on the returned channel.
func Gather[T any](items int, run func(i int, done func(T)), build func(results []T) kmsg.Response) <-chan kmsg.Response {
	ch := make(chan kmsg.Response, 1)
	if items == 0 {
		ch <- build(nil)
		return ch
	}
	results := make([]T, items)
	var mu sync.Mutex
	remaining := items
	for i := range items {
		var once sync.Once
		run(i, func(v T) {
			once.Do(func() {
				mu.Lock()
				results[i] = v
				remaining--
				last := remaining == 0
				mu.Unlock()
				if last {
					ch <- build(results)
				}
			})
		})
	}
	return ch
}

// collectServing runs list on the shard of every serving partition and answers with
// build once each has answered (one unloaded meanwhile contributes nothing); loading
// reports a partition still loading (COORDINATOR_LOAD_IN_PROGRESS for the lists).
func collectServing[S, E, T any](r *Router[S, E], list func(now time.Time, s S) []T,
	build func(items []T, loading bool) kmsg.Response) <-chan kmsg.Response {
	serving := r.Serving()
	loading := len(r.Loaded()) > len(serving)
	return Gather(len(serving), func(i int, done func([]T)) {
		r.SubmitTo(serving[i], func(now time.Time, s S) E {
			done(list(now, s))
			var none E
			return none
		}, func(int16) { done(nil) })
	}, func(results [][]T) kmsg.Response {
		items := []T{}
		for _, r := range results {
			items = append(items, r...)
		}
		return build(items, loading)
	})
}
