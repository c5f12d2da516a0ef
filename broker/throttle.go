package broker

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/metadata"
)

// KIP-73 replication throttles. A leader sends at most leader.replication.throttled.rate
// bytes per second, summed over its throttled replicas outside the ISR
// (leader.replication.throttled.replicas of their topic); a follower fetches at most
// follower.replication.throttled.rate for its own. Over the rate, a throttled
// partition's answer carries no records until the quota recovers, as in Kafka, and in-sync
// replicas are never throttled, so producers with acks=all do not wait on it. Rates and
// replica lists are read from the current image at every fetch: a config change takes
// effect at once.

// replicationQuota is a token bucket: up to one second of rate saved, spent by the
// bytes sent; a negative balance means the quota is exceeded.
type replicationQuota struct {
	mu     sync.Mutex
	tokens float64
	rate   float64
	last   time.Time
}

// exceeded reports whether the bucket is empty at rate bytes/s (rate ≤ 0: never).
func (q *replicationQuota) exceeded(rate int64, now time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.refillLocked(rate, now)
	return q.tokens < 0
}

// record spends n bytes.
func (q *replicationQuota) record(rate int64, n int, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.refillLocked(rate, now)
	q.tokens -= float64(n)
}

func (q *replicationQuota) refillLocked(rate int64, now time.Time) {
	r := float64(rate)
	if q.last.IsZero() || q.rate != r {
		q.tokens, q.rate, q.last = r, r, now
		return
	}
	q.tokens = math.Min(r, q.tokens+now.Sub(q.last).Seconds()*r)
	q.last = now
}

// replicationThrottles are a broker's two quotas.
type replicationThrottles struct {
	leader, follower replicationQuota
}

// dynamicBrokerValue returns a broker property as the image has it for this broker
// (per-broker dynamic config, then the cluster default), else its static value.
func (b *Broker) dynamicBrokerValue(im *metadata.Image, name string) string {
	if v, _, ok := config.DynamicBrokerConfigsFor(im, b.cfg.NodeID).Lookup(name); ok {
		return v
	}
	v, _ := b.cfg.brokerValue(name)
	return v
}

// throttleRate returns a throttled rate property, or -1 when it is unlimited.
func (b *Broker) throttleRate(im *metadata.Image, name string) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(b.dynamicBrokerValue(im, name)), 10, 64)
	if err != nil || n < 0 || n == math.MaxInt64 {
		return -1
	}
	return n
}

// replicaThrottled reports whether a topic's throttled-replicas config (key) names
// partition's replica on broker.
func replicaThrottled(im *metadata.Image, key, topic string, partition, broker int32) bool {
	v, ok := im.Config(metadata.ConfigResource{Type: metadata.TopicResource, Name: topic}, key)
	if !ok {
		return false
	}
	v = strings.TrimSpace(v)
	if v == "*" {
		return true
	}
	want := fmt.Sprintf("%d:%d", partition, broker)
	for _, e := range strings.Split(v, ",") {
		if strings.TrimSpace(e) == want {
			return true
		}
	}
	return false
}

// leaderThrottle returns the rate at which this leader throttles what it sends
// replica of topic-partition, or -1 when it does not (an in-sync replica, a replica not
// listed, or an unlimited rate).
func (b *Broker) leaderThrottle(im *metadata.Image, topic string, partition, replica int32, inSync bool) int64 {
	if inSync || !replicaThrottled(im, "leader.replication.throttled.replicas", topic, partition, replica) {
		return -1
	}
	return b.throttleRate(im, "leader.replication.throttled.rate")
}

// followerThrottle is leaderThrottle for this broker's own fetches as a follower.
func (b *Broker) followerThrottle(im *metadata.Image, topic string, partition int32, inSync bool) int64 {
	if inSync || !replicaThrottled(im, "follower.replication.throttled.replicas", topic, partition, b.cfg.NodeID) {
		return -1
	}
	return b.throttleRate(im, "follower.replication.throttled.rate")
}

// ownFollowerThrottle is followerThrottle for topic-partition as the current image
// has it (in sync when the image's ISR lists this broker).
func (b *Broker) ownFollowerThrottle(topic string, partition int32) int64 {
	im := b.Image()
	t := im.Topic(topic)
	if t == nil || partition < 0 || int(partition) >= len(t.Partitions) {
		return -1
	}
	return b.followerThrottle(im, topic, partition, slices.Contains(t.Partitions[partition].ISR, b.cfg.NodeID))
}
