package broker

import (
	"fmt"
	"testing"

	"github.com/petrel-broker/petrel/metadata"
)

// The consumer groups see a topic's id and partition count, its partitions' replica
// racks only when brokers have racks, and no internal topic among the names a regex
// is matched against.
func TestConsumerTopicsFromTheImage(t *testing.T) {
	im := &metadata.Image{
		Brokers: map[int32]*metadata.Broker{0: {ID: 0}, 1: {ID: 1}, 2: {ID: 2}},
		Topics: map[string]*metadata.Topic{
			"orders": {Name: "orders", ID: metadata.Uuid{7}, Partitions: []*metadata.Partition{
				{ID: 0, Replicas: []int32{0, 1}}, {ID: 1, Replicas: []int32{1, 2}}}},
			"__consumer_offsets":  {Name: "__consumer_offsets", ID: metadata.Uuid{8}},
			"__transaction_state": {Name: "__transaction_state", ID: metadata.Uuid{9}},
		},
	}
	ct := consumerTopics{im: im, cache: &consumerImageCache{}}
	got, ok := ct.ConsumerTopic("orders")
	if !ok || got.ID != [16]byte{7} || got.Name != "orders" || got.Partitions != 2 || got.PartitionRacks != nil {
		t.Fatalf("orders without racks: %+v %v", got, ok)
	}
	if _, ok := ct.ConsumerTopic("missing"); ok {
		t.Fatal("a missing topic was found")
	}
	if names := fmt.Sprint(ct.ConsumerTopicNames()); names != "[orders]" {
		t.Fatalf("names %s", names)
	}
	// The cached names follow the image: a new image (a topic created) is listed anew.
	next := *im
	next.Topics = map[string]*metadata.Topic{"orders": im.Topics["orders"], "payments": {Name: "payments", ID: metadata.Uuid{10}}}
	if names := fmt.Sprint(consumerTopics{im: &next, cache: ct.cache}.ConsumerTopicNames()); names != "[orders payments]" {
		t.Fatalf("names after a topic was created %s", names)
	}
	// Images are never changed in place: brokers with racks come in a new image, for
	// which the cached topics are derived again.
	racked := *im
	racked.Brokers = map[int32]*metadata.Broker{0: {ID: 0, Rack: "b"}, 1: {ID: 1, Rack: "a"}, 2: {ID: 2, Rack: "a"}}
	got, _ = consumerTopics{im: &racked, cache: ct.cache}.ConsumerTopic("orders")
	if racks := fmt.Sprint(got.PartitionRacks); racks != "[[a b] [a]]" {
		t.Fatalf("racks %s", racks)
	}
	if _, ok := (consumerTopics{}).ConsumerTopic("orders"); ok {
		t.Fatal("no image has a topic")
	}
}
