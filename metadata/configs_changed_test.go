package metadata

import "testing"

// ConfigsChangedSince is false across entries that leave configs alone and true after
// any config change, a topic deletion that drops configs, or a snapshot round trip.
func TestConfigsChangedSince(t *testing.T) {
	id := UuidFromBytes([16]byte{7})
	im := mustApply(t, NewImage(), 1, RegisterBrokerRecord{BrokerID: 0},
		TopicRecord{Name: "t", TopicID: id},
		PartitionRecord{TopicID: id, PartitionID: 0, Replicas: []int32{0}, ISR: []int32{0}, Leader: 0},
		ConfigRecord{ResourceType: TopicResource, ResourceName: "t", Name: "retention.ms", Value: ptr("1000")})
	isrOnly := mustApply(t, im, 2, PartitionChangeRecord{TopicID: id, PartitionID: 0, ISR: []int32{0}})
	if isrOnly.ConfigsChangedSince(im) {
		t.Fatal("an ISR change counted as a config change")
	}
	broker := mustApply(t, isrOnly, 3, ConfigRecord{ResourceType: BrokerResource, ResourceName: "", Name: "log.retention.ms", Value: ptr("5")})
	if !broker.ConfigsChangedSince(isrOnly) {
		t.Fatal("a new cluster default config not seen")
	}
	topic := mustApply(t, broker, 4, ConfigRecord{ResourceType: TopicResource, ResourceName: "t", Name: "retention.ms", Value: ptr("2000")})
	if !topic.ConfigsChangedSince(broker) {
		t.Fatal("a changed topic config not seen")
	}
	removed := mustApply(t, topic, 5, RemoveTopicRecord{TopicID: id})
	if !removed.ConfigsChangedSince(topic) {
		t.Fatal("a deleted topic's configs not seen")
	}
	if restored := topic.SnapshotForm().FromSnapshotForm(); !restored.ConfigsChangedSince(topic) {
		t.Fatal("a restored image counted as unchanged")
	}
	if !im.ConfigsChangedSince(nil) {
		t.Fatal("no previous image counted as unchanged")
	}
}
