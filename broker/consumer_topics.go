package broker

// The metadata image as the KIP-848 consumer groups read it (group.ConsumerTopics):
// a subscribed topic's id, partition count and, when brokers have racks (broker.rack),
// each partition's replica racks for the rack-aware assignors.

import (
	"slices"
	"sync"

	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/metadata"
)

// consumerTopics is a group.ConsumerTopics over one metadata image; cache, when set,
// keeps what it derived from the image between heartbeats.
type consumerTopics struct {
	im    *metadata.Image
	cache *consumerImageCache
}

// consumerImageCache holds what the consumer groups read of the last image asked for:
// every heartbeat looks its subscribed topics up (with their partitions' racks when
// brokers have racks) and regex groups list the names, while an image changes far
// less often. Callers must not change what it returns.
type consumerImageCache struct {
	mu     sync.Mutex
	im     *metadata.Image
	names  []string                       // nil until listed
	topics map[string]group.AssignorTopic // by name, as looked up
}

// forImage empties the cache when im is not the image it holds; c.mu is held.
func (c *consumerImageCache) forImage(im *metadata.Image) {
	if c.im != im {
		c.im, c.names, c.topics = im, nil, map[string]group.AssignorTopic{}
	}
}

// ConsumerTopic returns the topic named name in the image.
func (c consumerTopics) ConsumerTopic(name string) (group.AssignorTopic, bool) {
	if c.im == nil {
		return group.AssignorTopic{}, false
	}
	if c.cache == nil {
		return c.topic(name)
	}
	c.cache.mu.Lock()
	defer c.cache.mu.Unlock()
	c.cache.forImage(c.im)
	if t, ok := c.cache.topics[name]; ok {
		return t, true
	}
	t, ok := c.topic(name)
	if ok {
		c.cache.topics[name] = t
	}
	return t, ok
}

// topic derives the topic named name from the image.
func (c consumerTopics) topic(name string) (group.AssignorTopic, bool) {
	t := c.im.Topic(name)
	if t == nil {
		return group.AssignorTopic{}, false
	}
	out := group.AssignorTopic{ID: t.ID, Name: t.Name, Partitions: int32(len(t.Partitions))}
	if c.hasRacks() {
		out.PartitionRacks = make([][]string, len(t.Partitions))
		for i, p := range t.Partitions {
			out.PartitionRacks[i] = c.replicaRacks(p)
		}
	}
	return out, true
}

// ConsumerTopicNames returns the image's topic names but the internal topics, sorted.
func (c consumerTopics) ConsumerTopicNames() []string {
	if c.im == nil {
		return nil
	}
	if c.cache == nil {
		return slices.DeleteFunc(c.im.TopicNames(), isInternalTopic)
	}
	c.cache.mu.Lock()
	defer c.cache.mu.Unlock()
	c.cache.forImage(c.im)
	if c.cache.names == nil {
		c.cache.names = slices.DeleteFunc(c.im.TopicNames(), isInternalTopic)
	}
	return c.cache.names
}

// hasRacks reports whether any registered broker has a rack.
func (c consumerTopics) hasRacks() bool {
	for _, b := range c.im.Brokers {
		if b.Rack != "" {
			return true
		}
	}
	return false
}

// replicaRacks returns the distinct racks of p's replicas' brokers, sorted.
func (c consumerTopics) replicaRacks(p *metadata.Partition) []string {
	racks := []string{}
	for _, id := range p.Replicas {
		if b := c.im.Brokers[id]; b != nil && b.Rack != "" && !slices.Contains(racks, b.Rack) {
			racks = append(racks, b.Rack)
		}
	}
	slices.Sort(racks)
	return racks
}
