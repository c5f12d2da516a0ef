package replication

// KIP-73 replication throttles. A leader sends at most leader.replication.throttled.rate
// bytes per second, summed over its throttled replicas outside the ISR
// (leader.replication.throttled.replicas of their topic); a follower fetches at most
// follower.replication.throttled.rate for its own. Over the rate, a throttled
// partition's answer carries no records until the quota recovers, as in Kafka, and
// in-sync replicas are never throttled, so producers with acks=all do not wait on it.
// The broker reads rates and replica lists from the current image at every fetch: a
// config change takes effect at once.

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/petrel-broker/petrel/metadata"
)

// Quota is a token bucket: up to one second of rate saved, spent by the bytes sent; a
// negative balance means the quota is exceeded. The zero value is ready; safe for
// concurrent use.
type Quota struct {
	mu     sync.Mutex
	tokens float64
	rate   float64
	last   time.Time
}

// Exceeded reports whether the bucket is empty at rate bytes/s (rate ≤ 0: never).
func (q *Quota) Exceeded(rate int64, now time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.refillLocked(rate, now)
	return q.tokens < 0
}

// Record spends n bytes.
func (q *Quota) Record(rate int64, n int, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.refillLocked(rate, now)
	q.tokens -= float64(n)
}

func (q *Quota) refillLocked(rate int64, now time.Time) {
	r := float64(rate)
	if q.last.IsZero() || q.rate != r {
		q.tokens, q.rate, q.last = r, r, now
		return
	}
	q.tokens = math.Min(r, q.tokens+now.Sub(q.last).Seconds()*r)
	q.last = now
}

// Throttles are a broker's two replication quotas.
type Throttles struct {
	Leader, Follower Quota
}

// ReplicaThrottled reports whether a topic's throttled-replicas config (key:
// leader.replication.throttled.replicas or follower.replication.throttled.replicas)
// names partition's replica on broker.
func ReplicaThrottled(im *metadata.Image, key, topic string, partition, broker int32) bool {
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
