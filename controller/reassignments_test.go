package controller

import (
	"errors"
	"testing"

	"github.com/petrel-broker/petrel/metadata"
)

// AlterPartitionReassignments records a valid reassignment and refuses, per partition,
// an unknown partition, an unregistered broker, a cancel of nothing and a replication
// factor change that is not allowed; a cancel then ends the reassignment. A request past
// the bound is refused whole.
func TestAlterPartitionReassignmentsDecision(t *testing.T) {
	c, q := activeController(t, 0, 1, 2)
	ctx := testCtx(t)
	if _, _, err := c.createTopic(ctx, TopicSpec{Name: "t", Assignment: [][]int32{{0}, {1}}, Partitions: -1, ReplicationFactor: -1}); err != nil {
		t.Fatal(err)
	}
	reqs := []Reassignment{
		{Topic: "t", Partition: 0, Replicas: []int32{2}},
		{Topic: "t", Partition: 9, Replicas: []int32{2}},
		{Topic: "t", Partition: 1, Replicas: []int32{7}},
		{Topic: "t", Partition: 1},
		{Topic: "missing", Partition: 0, Replicas: []int32{0}},
	}
	results, err := c.AlterPartitionReassignments(ctx, reqs, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []error{nil, metadata.ErrUnknownPartition, metadata.ErrInvalidReplicaAssignment, metadata.ErrNoReassignmentInProgress, metadata.ErrUnknownTopic}
	for i, w := range want {
		if (w == nil) != (results[i] == nil) || (w != nil && !errors.Is(results[i], w)) {
			t.Errorf("%+v: %v, want %v", reqs[i], results[i], w)
		}
	}
	p := q.Image().Topic("t").Partitions[0]
	if len(p.Adding) != 1 || p.Adding[0] != 2 {
		t.Fatalf("partition 0 after the reassignment: %+v, want broker 2 adding", p)
	}
	results, _ = c.AlterPartitionReassignments(ctx, []Reassignment{{Topic: "t", Partition: 1, Replicas: []int32{1, 2}}}, false)
	if !errors.Is(results[0], metadata.ErrInvalidReplicationFactor) {
		t.Fatalf("replication factor change not allowed: %v", results[0])
	}
	if results, _ = c.AlterPartitionReassignments(ctx, []Reassignment{{Topic: "t", Partition: 0}}, true); results[0] != nil {
		t.Fatalf("cancel: %v", results[0])
	}
	if p := q.Image().Topic("t").Partitions[0]; len(p.Adding) != 0 || len(p.Replicas) != 1 || p.Replicas[0] != 0 {
		t.Fatalf("partition 0 after the cancel: %+v", p)
	}
	if _, err := c.AlterPartitionReassignments(ctx, make([]Reassignment, MaxResourcesPerRequest+1), true); !errors.Is(err, ErrPolicyViolation) {
		t.Fatalf("past the bound: %v", err)
	}
}
