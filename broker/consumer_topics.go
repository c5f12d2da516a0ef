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

// consumerTopics is a group.ConsumerTopics over one metadata image; names, when set,
// keeps the image's sorted names between heartbeats.
type consumerTopics struct {
	im    *metadata.Image
	names *topicNamesCache
}

// topicNamesCache holds the non-internal topic names of the last image asked for:
// regex groups list them at many heartbeats, and an image changes far less often.
type topicNamesCache struct {
	mu    sync.Mutex
	im    *metadata.Image
	names []string
}

// of returns im's non-internal topic names, sorted; callers must not change them.
func (c *topicNamesCache) of(im *metadata.Image) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.im != im {
		c.im, c.names = im, slices.DeleteFunc(im.TopicNames(), isInternalTopic)
	}
	return c.names
}

// ConsumerTopic returns the topic named name in the image.
func (c consumerTopics) ConsumerTopic(name string) (group.AssignorTopic, bool) {
	if c.im == nil {
		return group.AssignorTopic{}, false
	}
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
	if c.names != nil {
		return c.names.of(c.im)
	}
	return slices.DeleteFunc(c.im.TopicNames(), isInternalTopic)
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
