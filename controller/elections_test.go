package controller

import (
	"errors"
	"testing"

	"github.com/petrel-broker/petrel/metadata"
)

// A preferred election moves a partition back to its first replica; a partition led by
// it already needs none (and is left out when every partition is asked for), an
// unknown one is refused, and an unclean election of a led partition is not needed.
func TestElectLeadersDecision(t *testing.T) {
	c, q := activeController(t, 0, 1)
	ctx := testCtx(t)
	created, _, err := c.createTopic(ctx, TopicSpec{Name: "t", Assignment: [][]int32{{0, 1}, {1, 0}}, Partitions: -1, ReplicationFactor: -1})
	if err != nil {
		t.Fatal(err)
	}
	one := int32(1)
	if _, err := c.Do(ctx, func(*metadata.Image) ([]metadata.Record, error) {
		return []metadata.Record{metadata.PartitionChangeRecord{TopicID: created.ID, PartitionID: 0, Leader: &one}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	p0 := metadata.TopicPartitionID{Topic: "t", Partition: 0}
	p1 := metadata.TopicPartitionID{Topic: "t", Partition: 1}
	unknown := metadata.TopicPartitionID{Topic: "t", Partition: 7}
	results := c.ElectLeaders(ctx, []metadata.TopicPartitionID{p0, p1, unknown}, ElectPreferred)
	want := []error{nil, metadata.ErrElectionNotNeeded, metadata.ErrUnknownPartition}
	for i, w := range want {
		if results[i].Partition != []metadata.TopicPartitionID{p0, p1, unknown}[i] || (w == nil) != (results[i].Err == nil) || !errors.Is(results[i].Err, w) && w != nil {
			t.Errorf("result %d: %+v, want %v", i, results[i], w)
		}
	}
	if leader := q.Image().Topic("t").Partitions[0].Leader; leader != 0 {
		t.Fatalf("partition 0 led by %d after the preferred election, want 0", leader)
	}
	if all := c.ElectLeaders(ctx, nil, ElectPreferred); len(all) != 0 {
		t.Fatalf("every partition asked, none needing an election: %+v", all)
	}
	if results := c.ElectLeaders(ctx, []metadata.TopicPartitionID{p1}, ElectUnclean); !errors.Is(results[0].Err, metadata.ErrElectionNotNeeded) {
		t.Fatalf("unclean election of a led partition: %v", results[0].Err)
	}
}
