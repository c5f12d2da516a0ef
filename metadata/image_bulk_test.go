package metadata

import (
	"slices"
	"testing"
)

// TestApplyManyRecordsOfOneTopic: an entry that adds and changes many partitions of one
// topic (changed in place inside the entry) leaves the image it was applied to exactly
// as it was, and the new image holds every change.
func TestApplyManyRecordsOfOneTopic(t *testing.T) {
	im := mustApply(t, NewImage(), 1, RegisterBrokerRecord{BrokerID: 0}, RegisterBrokerRecord{BrokerID: 1})
	im = mustApply(t, im, 2, createTopicRecords("t", 1, []int32{0, 1}, []int32{1, 0})...)
	old := im.Topic("t")
	oldParts := slices.Clone(old.Partitions)
	var recs []Record
	for i := int32(2); i < 500; i++ {
		recs = append(recs, PartitionRecord{TopicID: Uuid{1}, PartitionID: i, Replicas: []int32{0, 1}, ISR: []int32{0, 1}, Leader: 0})
	}
	for i := int32(0); i < 500; i += 3 {
		recs = append(recs, PartitionChangeRecord{TopicID: Uuid{1}, PartitionID: i, ISR: []int32{0}, Leader: ptr(int32(0))})
	}
	next := mustApply(t, im, 3, recs...)
	if im.Topic("t") != old || !slices.Equal(old.Partitions, oldParts) || len(old.Partitions) != 2 {
		t.Fatal("Apply changed the old image's topic")
	}
	if oldParts[0].PartitionEpoch != 0 || len(oldParts[0].ISR) != 2 {
		t.Fatalf("Apply changed an old partition: %+v", oldParts[0])
	}
	parts := next.Topic("t").Partitions
	if len(parts) != 500 {
		t.Fatalf("%d partitions", len(parts))
	}
	for i, p := range parts {
		changed := i%3 == 0
		if int(p.ID) != i || changed != (p.PartitionEpoch == 1) || changed != (len(p.ISR) == 1) {
			t.Fatalf("partition %d: %+v", i, p)
		}
	}
	// A later entry changes the new image without touching it either.
	before := slices.Clone(next.Topic("t").Partitions)
	after := mustApply(t, next, 4, PartitionChangeRecord{TopicID: Uuid{1}, PartitionID: 1, ISR: []int32{1}})
	if !slices.Equal(next.Topic("t").Partitions, before) || after.Topic("t").Partitions[1].PartitionEpoch != 1 {
		t.Fatal("the second entry changed the first entry's image")
	}
	// A refused entry changes nothing, even after changing a topic in place.
	bad := append([]Record{PartitionChangeRecord{TopicID: Uuid{1}, PartitionID: 4, ISR: []int32{1}}},
		PartitionRecord{TopicID: Uuid{1}, PartitionID: 900, Replicas: []int32{0}, ISR: []int32{0}})
	if got, err := after.Apply(5, bad); err == nil || got != after || after.Topic("t").Partitions[4].PartitionEpoch != 0 {
		t.Fatalf("refused entry: %v, image changed %v", err, got != after)
	}
}

// BenchmarkApplyLargeTopic applies the largest topic creation the controller allows:
// one topic record and 9,999 partition records in one entry.
func BenchmarkApplyLargeTopic(b *testing.B) {
	im, err := NewImage().Apply(1, []Record{RegisterBrokerRecord{BrokerID: 0}})
	if err != nil {
		b.Fatal(err)
	}
	recs := []Record{TopicRecord{Name: "large", TopicID: Uuid{1}}}
	for i := int32(0); i < 9_999; i++ {
		recs = append(recs, PartitionRecord{TopicID: Uuid{1}, PartitionID: i, Replicas: []int32{0}, ISR: []int32{0}, Leader: 0})
	}
	for b.Loop() {
		if _, err := im.Apply(2, recs); err != nil {
			b.Fatal(err)
		}
	}
}
