package replication

// Fetch v13+ names topics by id (KIP-516), in the request, its forgotten topics, the
// session (keyed by topic id and partition, as Kafka's TopicIdPartition) and the
// answer. Each read resolves a partition's topic id to its name through the broker's
// image at that read, so that a session whose topic was deleted and re-created under
// the same name never reads the new topic through the old id. As in Kafka, a full or
// sessionless fetch of the old id is UNKNOWN_TOPIC_ID, and a session partition of the
// old id — whose name was resolved when it joined — INCONSISTENT_TOPIC_ID once the name
// is another topic's (kgo resets its session on it), as is a local replica still of
// another incarnation of the topic. Each read writes the resolved name into the
// request it reads (the session's plan), where the session finds it. Below v13 the
// name is the topic.

import "github.com/twmb/franz-go/pkg/kmsg"

// topicName is the name to read partition of t under, or the partition's code; t's
// name (v13+: the name its session resolved, else "") is set to the name resolved.
func (s *FetchServer) topicName(r *kmsg.FetchRequest, t *kmsg.FetchRequestTopic, partition int32) (string, int16) {
	if r.Version < 13 {
		return t.Topic, 0
	}
	name, code := s.Source.TopicName(t.TopicID, t.Topic, partition)
	if code == 0 {
		t.Topic = name
	}
	return name, code
}
