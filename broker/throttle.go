package broker

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/replication"
)

// The KIP-73 replication throttles' rates and replica lists as this broker reads them
// (replication/throttle.go holds the quotas).

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

// leaderThrottle returns the rate at which this leader throttles what it sends
// replica of topic-partition, or -1 when it does not (an in-sync replica, a replica not
// listed, or an unlimited rate).
func (b *Broker) leaderThrottle(im *metadata.Image, topic string, partition, replica int32, inSync bool) int64 {
	if inSync || !replication.ReplicaThrottled(im, "leader.replication.throttled.replicas", topic, partition, replica) {
		return -1
	}
	return b.throttleRate(im, "leader.replication.throttled.rate")
}

// followerThrottle is leaderThrottle for this broker's own fetches as a follower.
func (b *Broker) followerThrottle(im *metadata.Image, topic string, partition int32, inSync bool) int64 {
	if inSync || !replication.ReplicaThrottled(im, "follower.replication.throttled.replicas", topic, partition, b.cfg.NodeID) {
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

// replicationThrottles are the broker's two replication quotas.
type replicationThrottles = replication.Throttles
