package metadata

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func ptr[T any](v T) *T { return &v }

func createTopicRecords(name string, id byte, replicas ...[]int32) []Record {
	tid := Uuid{id}
	recs := []Record{TopicRecord{Name: name, TopicID: tid}}
	for i, r := range replicas {
		recs = append(recs, PartitionRecord{TopicID: tid, PartitionID: int32(i), Replicas: r, ISR: r, Leader: r[0]})
	}
	return recs
}

func mustApply(t *testing.T, im *Image, off uint64, recs ...Record) *Image {
	t.Helper()
	next, err := im.Apply(off, recs)
	if err != nil {
		t.Fatal(err)
	}
	return next
}

func TestImageApply(t *testing.T) {
	im := NewImage()
	im = mustApply(t, im, 1, ClusterRecord{ClusterID: "c1"}, RegisterBrokerRecord{BrokerID: 0, Listeners: []Endpoint{{"PLAINTEXT", "h", 9092}}})
	if im.Brokers[0].Epoch != 1 || im.ClusterID != "c1" {
		t.Fatalf("broker %+v cluster %q", im.Brokers[0], im.ClusterID)
	}
	before := im
	im = mustApply(t, im, 2, createTopicRecords("t", 1, []int32{0}, []int32{0})...)
	if before.Topic("t") != nil {
		t.Fatal("Apply modified the old image")
	}
	if p := im.Topic("t").Partitions[1]; p.Leader != 0 || p.LeaderEpoch != 0 || p.PartitionEpoch != 0 {
		t.Fatalf("partition %+v", p)
	}
	// A change bumps the partition epoch; a leader field bumps the leader epoch.
	im = mustApply(t, im, 3, PartitionChangeRecord{TopicID: Uuid{1}, PartitionID: 0, ISR: []int32{0}})
	im = mustApply(t, im, 4, PartitionChangeRecord{TopicID: Uuid{1}, PartitionID: 0, Leader: ptr(int32(0))})
	if p := im.Topic("t").Partitions[0]; p.LeaderEpoch != 1 || p.PartitionEpoch != 2 {
		t.Fatalf("epochs after changes: %+v", p)
	}
	im = mustApply(t, im, 5, ConfigRecord{ResourceType: TopicResource, ResourceName: "t", Name: "retention.ms", Value: ptr("1000")})
	if v, _ := im.Config(ConfigResource{TopicResource, "t"}, "retention.ms"); v != "1000" {
		t.Fatalf("config %q", v)
	}
	// Refusals leave the image unchanged, whole entry at a time.
	for name, recs := range map[string][]Record{
		"exists":            createTopicRecords("t", 2, []int32{0}),
		"bad name":          createTopicRecords("a b", 3, []int32{0}),
		"leader not in isr": {PartitionChangeRecord{TopicID: Uuid{1}, PartitionID: 0, Leader: ptr(int32(5))}},
		"unknown topic":     {RemoveTopicRecord{TopicID: Uuid{9}}},
		"partial":           append(createTopicRecords("u", 4, []int32{0}), PartitionRecord{TopicID: Uuid{4}, PartitionID: 3, Replicas: []int32{0}, ISR: []int32{0}}),
	} {
		next, err := im.Apply(6, recs)
		if err == nil || next != im {
			t.Fatalf("%s: err %v, image changed %v", name, err, next != im)
		}
	}
	if _, err := im.Apply(6, createTopicRecords("t", 2, []int32{0})); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("exists: %v", err)
	}
	im = mustApply(t, im, 7, RemoveTopicRecord{TopicID: Uuid{1}})
	if im.Topic("t") != nil || len(im.TopicIDs) != 0 || len(im.Configs) != 0 || im.Offset != 7 {
		t.Fatalf("after removal: %+v", im)
	}
}

func TestRecordsRoundTripAndSnapshotForm(t *testing.T) {
	recs := append([]Record{ClusterRecord{"c"}, RegisterBrokerRecord{BrokerID: 3, IncarnationID: Uuid{7}, Rack: "r"}},
		createTopicRecords("orders", 5, []int32{3})...)
	recs = append(recs, ConfigRecord{ResourceType: TopicResource, ResourceName: "orders", Name: "segment.bytes", Value: ptr("100")},
		PartitionChangeRecord{TopicID: Uuid{5}, PartitionID: 0, Leader: ptr(int32(-1))}, NoOpRecord{},
		ProducerIdsRecord{BrokerID: 3, BrokerEpoch: 10, NextProducerID: 1000})
	b, err := EncodeRecords(recs...)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRecords(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, recs) {
		t.Fatalf("round trip:\n%#v\n%#v", got, recs)
	}
	im := mustApply(t, NewImage(), 10, recs...)
	data, err := json.Marshal(im.SnapshotForm())
	if err != nil {
		t.Fatal(err)
	}
	var back Image
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	restored := back.FromSnapshotForm()
	restored.ConfigList = nil
	if !reflect.DeepEqual(restored, im) {
		t.Fatalf("snapshot round trip:\n%+v\n%+v", restored, im)
	}
	if _, err := DecodeRecords([]byte(`[{"t":999,"v":0,"d":{}}]`)); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("unknown type: %v", err)
	}
	if _, err := DecodeRecords([]byte(`[{"t":2,"v":9,"d":{}}]`)); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("newer version: %v", err)
	}
}

// Producer id blocks only grow, and only for registered brokers.
func TestProducerIdsRecord(t *testing.T) {
	im := mustApply(t, NewImage(), 1, RegisterBrokerRecord{BrokerID: 1})
	im = mustApply(t, im, 2, ProducerIdsRecord{BrokerID: 1, BrokerEpoch: 1, NextProducerID: 1000})
	if im.NextProducerID != 1000 {
		t.Fatalf("next producer id %d", im.NextProducerID)
	}
	for _, r := range []ProducerIdsRecord{{BrokerID: 1, NextProducerID: 1000}, {BrokerID: 1, NextProducerID: 10}, {BrokerID: 2, NextProducerID: 2000}} {
		next, err := im.Apply(3, []Record{r})
		if err == nil || next.NextProducerID != 1000 {
			t.Fatalf("%+v applied: %v, next %d", r, err, next.NextProducerID)
		}
	}
}

func TestValidateTopicName(t *testing.T) {
	long := make([]byte, 250)
	for i := range long {
		long[i] = 'a'
	}
	for name, ok := range map[string]bool{"t": true, "a.b_c-D9": true, string(long[:249]): true,
		"": false, ".": false, "..": false, string(long): false, "a b": false, "a/b": false, "ü": false} {
		if err := ValidateTopicName(name); (err == nil) != ok {
			t.Errorf("%q: %v", name, err)
		}
	}
}

func TestUuidText(t *testing.T) {
	u := UuidFromBytes([16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	p, err := ParseUuid(u.String())
	if err != nil || p != u || len(u.String()) != 22 {
		t.Fatalf("%s -> %v %v", u, p, err)
	}
}
