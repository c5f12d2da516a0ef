package controller

import (
	"testing"
	"time"

	"github.com/petrel-broker/petrel/metadata"
)

// With broker.rack set, CreateTopics and CreatePartitions place a partition's replicas
// on distinct racks (Kafka's rack-aware placement): six brokers over racks a, b, c,
// RF 3, every partition spans the three racks, and leaders spread over all brokers.
func TestCreateTopicsAndPartitionsSpreadOverRacks(t *testing.T) {
	racks := map[int32]string{0: "a", 1: "a", 2: "b", 3: "b", 4: "c", 5: "c"}
	var records []metadata.Record
	for id := int32(0); id < 6; id++ {
		records = append(records, metadata.RegisterBrokerRecord{BrokerID: id, Rack: racks[id]})
	}
	q := newMemQuorum(t, records...)
	q.leader.Store(true)
	c := startController(t, q, time.Minute, func(cfg *Config) {
		cfg.TopicDefaults = TopicDefaults{NumPartitions: 1, ReplicationFactor: 3}
	})
	ctx := testCtx(t)
	if _, _, err := c.createTopic(ctx, TopicSpec{Name: "racked", Partitions: 6, ReplicationFactor: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreatePartitions(ctx, PartitionsSpec{Topic: "racked", Count: 12}, false); err != nil {
		t.Fatal(err)
	}
	leaders := map[int32]int{}
	for _, p := range q.Image().Topic("racked").Partitions {
		seen := map[string]bool{}
		for _, r := range p.Replicas {
			seen[racks[r]] = true
		}
		if len(p.Replicas) != 3 || len(seen) != 3 {
			t.Errorf("partition %d: replicas %v span racks %v, want a, b and c", p.ID, p.Replicas, seen)
		}
		leaders[p.Leader]++
	}
	if len(leaders) != 6 {
		t.Errorf("leaders %v: want every broker to lead some of the 12 partitions", leaders)
	}
}
