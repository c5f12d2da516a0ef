package broker

// The metadata image as the KIP-848 consumer groups read it (group.ConsumerTopics):
// a subscribed topic's id, partition count and, when brokers have racks (broker.rack),
// each partition's replica racks for the rack-aware assignors.

import (
	"slices"

	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/metadata"
)

// consumerTopics is a group.ConsumerTopics over one metadata image.
type consumerTopics struct{ im *metadata.Image }

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
