package broker

// The group coordinator's metrics (metrics/groups.go): the coordinated groups read
// from each serving shard at scrape time, and the shards' rebalances counted as they
// happen (group.Config.OnRebalance).

import (
	"time"

	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/metrics"
)

// fromServingShards runs read on every serving __consumer_offsets shard's executor and
// gathers what they answer within groupLagTimeout; nothing once the broker stops.
func fromServingShards[T any](b *Broker, read func(s *group.Shard) []T) []T {
	serving := b.groups.Serving()
	if len(serving) == 0 {
		return nil
	}
	ch := make(chan []T, len(serving))
	for _, p := range serving {
		b.groups.SubmitTo(p, func(_ time.Time, s *group.Shard) group.Effects {
			ch <- read(s)
			return group.Effects{}
		}, func(int16) { ch <- nil })
	}
	var out []T
	timer := time.NewTimer(groupLagTimeout)
	defer timer.Stop()
	for range serving {
		select {
		case items := <-ch:
			out = append(out, items...)
		case <-timer.C:
			return out
		case <-b.stop:
			return nil
		}
	}
	return out
}

// groupStates returns the groups this broker coordinates, for the metrics.
func (b *Broker) groupStates() []metrics.GroupState {
	summaries := fromServingShards(b, (*group.Shard).Summaries)
	out := make([]metrics.GroupState, len(summaries))
	for i, s := range summaries {
		out[i] = metrics.GroupState(s)
	}
	return out
}

// observeRebalance counts a rebalance step of a coordinated group (group.Config.OnRebalance).
func (b *Broker) observeRebalance(r group.Rebalance) {
	b.metrics.GroupRebalanced(r.GroupType, r.Completed, r.Took)
}
