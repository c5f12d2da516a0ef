package metadata

import (
	"slices"
	"testing"
)

// decommissionImage has brokers 0-3 (3 fenced), topic t with partitions on {0,1} and
// {1,2} (the second being reassigned onto 2), and per-broker configs.
func decommissionImage(t *testing.T, configs ...ConfigRecord) *Image {
	t.Helper()
	records := []Record{}
	for id := int32(0); id < 4; id++ {
		records = append(records, RegisterBrokerRecord{BrokerID: id, Fenced: id == 3})
	}
	tid := Uuid{1}
	records = append(records, TopicRecord{Name: "t", TopicID: tid},
		PartitionRecord{TopicID: tid, PartitionID: 0, Replicas: []int32{0, 1}, ISR: []int32{0, 1}, Leader: 0},
		PartitionRecord{TopicID: tid, PartitionID: 1, Replicas: []int32{1, 0}, ISR: []int32{1, 0}, Leader: 1},
		PartitionChangeRecord{TopicID: tid, PartitionID: 1, Replicas: []int32{1, 0, 2}, Adding: []int32{2}, Removing: []int32{0}})
	for _, c := range configs {
		records = append(records, c)
	}
	im, err := NewImage().Apply(1, records)
	if err != nil {
		t.Fatal(err)
	}
	return im
}

func strPtr(s string) *string { return &s }

func TestReplicaCount(t *testing.T) {
	im := decommissionImage(t)
	for _, tc := range []struct {
		id    int32
		n     int
		first string
	}{{0, 2, "t-0"}, {1, 2, "t-0"}, {2, 1, "t-1"}, {3, 0, ""}, {9, 0, ""}} {
		if n, first := im.ReplicaCount(tc.id); n != tc.n || first != tc.first {
			t.Errorf("broker %d: %d replicas, first %q; want %d, %q", tc.id, n, first, tc.n, tc.first)
		}
	}
}

func TestPlacementSkipsCordonedBrokers(t *testing.T) {
	cordon := func(name, value string) ConfigRecord {
		return ConfigRecord{ResourceType: BrokerResource, ResourceName: name, Name: CordonedLogDirsConfig, Value: strPtr(value)}
	}
	for _, tc := range []struct {
		name      string
		configs   []ConfigRecord
		placement []int32
		shortRF3  bool // rf 3 is refused because of the cordon
	}{
		{"none", nil, []int32{0, 1, 2}, false},
		{"broker 1 cordoned", []ConfigRecord{cordon("1", "*")}, []int32{0, 2}, true},
		{"a path cordons it too", []ConfigRecord{cordon("2", "/data/logs")}, []int32{0, 1}, true},
		{"empty value is not a cordon", []ConfigRecord{cordon("2", "")}, []int32{0, 1, 2}, false},
		{"fenced broker 3 cordoned", []ConfigRecord{cordon("3", "*")}, []int32{0, 1, 2}, false},
	} {
		im := decommissionImage(t, tc.configs...)
		if got := im.PlacementBrokerIDs(); !slices.Equal(got, tc.placement) {
			t.Errorf("%s: placement brokers %v, want %v", tc.name, got, tc.placement)
		}
		if err := im.PlacementShortfall(3); (err != nil) != tc.shortRF3 {
			t.Errorf("%s: shortfall for rf 3: %v", tc.name, err)
		}
		if err := im.PlacementShortfall(4); err != nil {
			t.Errorf("%s: rf 4 exceeds the unfenced brokers whatever the cordon, got %v", tc.name, err)
		}
	}
}

func TestUnregisterBrokerRecordsDropItsConfigs(t *testing.T) {
	im := decommissionImage(t,
		ConfigRecord{ResourceType: BrokerResource, ResourceName: "3", Name: CordonedLogDirsConfig, Value: strPtr("*")},
		ConfigRecord{ResourceType: BrokerResource, ResourceName: "3", Name: "log.cleaner.threads", Value: strPtr("2")},
		ConfigRecord{ResourceType: BrokerResource, ResourceName: "", Name: "log.cleaner.threads", Value: strPtr("3")})
	records := UnregisterBrokerRecords(im, 3)
	if len(records) != 3 {
		t.Fatalf("records %+v, want the unregistration and two config deletions", records)
	}
	next, err := im.Apply(2, records)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := next.Brokers[3]; ok {
		t.Fatal("broker 3 still registered")
	}
	if cfg := next.ResourceConfigs(ConfigResource{BrokerResource, "3"}); len(cfg) != 0 {
		t.Fatalf("broker 3's configs remain: %v", cfg)
	}
	if v, _ := next.Config(ConfigResource{BrokerResource, ""}, "log.cleaner.threads"); v != "3" {
		t.Fatalf("the cluster default was touched: %q", v)
	}
	if UnregisterBrokerRecords(next, 3) != nil {
		t.Fatal("records for an unknown broker")
	}
}
