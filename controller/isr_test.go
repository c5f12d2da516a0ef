package controller

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/petrel-broker/petrel/metadata"
)

var isrTestTopic = metadata.UuidFromBytes([16]byte{9})

// isrTestRecords: brokers 1 and 2 unfenced, 3 fenced; topic t with partition 0
// (replicas 1,2,3, ISR 1,2, leader 1, epochs 0/0) and partition 1 (the same, at leader
// epoch 1 and partition epoch 2).
func isrTestRecords() []metadata.Record {
	leader := int32(1)
	return []metadata.Record{
		metadata.RegisterBrokerRecord{BrokerID: 1}, metadata.RegisterBrokerRecord{BrokerID: 2},
		metadata.RegisterBrokerRecord{BrokerID: 3, Fenced: true},
		metadata.TopicRecord{Name: "t", TopicID: isrTestTopic},
		metadata.PartitionRecord{TopicID: isrTestTopic, PartitionID: 0, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1},
		metadata.PartitionRecord{TopicID: isrTestTopic, PartitionID: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1},
		metadata.PartitionChangeRecord{TopicID: isrTestTopic, PartitionID: 1, Leader: &leader},
		metadata.PartitionChangeRecord{TopicID: isrTestTopic, PartitionID: 1, ISR: []int32{1, 2}},
	}
}

// startISRTest runs an active controller over isrTestRecords; ctx ends with the test.
func startISRTest(t *testing.T) (*memQuorum, *Controller, context.Context) {
	t.Helper()
	return startActiveController(t, isrTestRecords())
}

// Each ISR change is checked in Kafka's order, and only a valid one becomes a record.
func TestCheckISRChange(t *testing.T) {
	im, err := metadata.NewImage().Apply(1, isrTestRecords())
	if err != nil {
		t.Fatal(err)
	}
	if p := im.Topic("t").Partitions[1]; p.LeaderEpoch != 1 || p.PartitionEpoch != 2 {
		t.Fatalf("partition 1 at epochs %d/%d, want 1/2", p.LeaderEpoch, p.PartitionEpoch)
	}
	e1, e2 := im.Brokers[1].Epoch, im.Brokers[2].Epoch
	for _, tc := range []struct {
		name   string
		broker int32
		ch     ISRChange
		want   error
	}{
		{"unknown partition", 1, ISRChange{Topic: "t", Partition: 5, ISR: []int32{1}}, metadata.ErrUnknownPartition},
		{"unknown topic id", 1, ISRChange{ByID: true, TopicID: metadata.UuidFromBytes([16]byte{1}), ISR: []int32{1}}, metadata.ErrUnknownPartition},
		{"newer leader epoch", 1, ISRChange{Topic: "t", LeaderEpoch: 1, ISR: []int32{1}}, ErrNotController},
		{"newer partition epoch", 1, ISRChange{Topic: "t", PartitionEpoch: 1, ISR: []int32{1}}, ErrNotController},
		{"older leader epoch", 1, ISRChange{Topic: "t", Partition: 1, PartitionEpoch: 2, ISR: []int32{1}}, ErrFencedLeaderEpoch},
		{"not the leader", 2, ISRChange{Topic: "t", ISR: []int32{2}}, ErrInvalidISRChange},
		{"older partition epoch", 1, ISRChange{Topic: "t", Partition: 1, LeaderEpoch: 1, PartitionEpoch: 1, ISR: []int32{1}}, ErrStalePartitionEpoch},
		{"without the leader", 1, ISRChange{Topic: "t", ISR: []int32{2}}, ErrInvalidISRChange},
		{"outside the replicas", 1, ISRChange{Topic: "t", ISR: []int32{1, 4}}, ErrInvalidISRChange},
		{"fenced member", 1, ISRChange{Topic: "t", ISR: []int32{1, 3}}, ErrIneligibleReplica},
		{"a member at another broker epoch", 1, ISRChange{Topic: "t", ISR: []int32{1, 2}, BrokerEpochs: []int64{e1, e2 + 1}}, ErrIneligibleReplica},
		{"valid", 1, ISRChange{Topic: "t", ISR: []int32{1}}, nil},
		{"valid with broker epochs", 1, ISRChange{Topic: "t", ISR: []int32{1, 2}, BrokerEpochs: []int64{e1, e2}}, nil},
		{"valid with an unknown broker epoch", 1, ISRChange{Topic: "t", ISR: []int32{1, 2}, BrokerEpochs: []int64{-1, -1}}, nil},
		{"valid by id", 1, ISRChange{ByID: true, TopicID: isrTestTopic, Partition: 1, LeaderEpoch: 1, PartitionEpoch: 2, ISR: []int32{1}}, nil},
	} {
		rec, err := checkISRChange(im, tc.broker, tc.ch)
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
			continue
		}
		if err == nil && (rec.TopicID != isrTestTopic || rec.PartitionID != tc.ch.Partition || !slices.Equal(rec.ISR, tc.ch.ISR)) {
			t.Errorf("%s: record %+v", tc.name, rec)
		}
	}
}

// AlterISR commits the valid changes of a request in one entry and answers each; a
// broker at another epoch fails the whole request.
func TestAlterISRCommitsTheValidChanges(t *testing.T) {
	q, c, ctx := startISRTest(t)
	epoch := q.Image().Brokers[1].Epoch
	if _, err := c.AlterISR(ctx, 1, epoch+1, nil); !errors.Is(err, ErrStaleBrokerEpoch) {
		t.Fatalf("another broker epoch: %v", err)
	}
	outcomes, err := c.AlterISR(ctx, 1, epoch, []ISRChange{
		{Topic: "t", ISR: []int32{1}},
		{Topic: "t", Partition: 1, ISR: []int32{1}}, // older leader epoch
	})
	if err != nil || len(outcomes) != 2 || outcomes[0] != nil || !errors.Is(outcomes[1], ErrFencedLeaderEpoch) {
		t.Fatalf("outcomes %v, err %v", outcomes, err)
	}
	parts := q.Image().Topic("t").Partitions
	if !slices.Equal(parts[0].ISR, []int32{1}) || !slices.Equal(parts[1].ISR, []int32{1, 2}) {
		t.Fatalf("ISRs %v and %v, want [1] and [1 2]", parts[0].ISR, parts[1].ISR)
	}
}

// A replica a broker reports in the LOST directory leaves its ISR and leadership;
// unknown partitions are answered as such and other directories change nothing.
func TestAssignReplicasToDirsTakesLostReplicasOut(t *testing.T) {
	q, c, ctx := startISRTest(t)
	epoch := q.Image().Brokers[1].Epoch
	unknownRef := metadata.ReplicaRef{TopicID: isrTestTopic, Partition: 7}
	unknown, err := c.AssignReplicasToDirs(ctx, 1, epoch, []ReplicaDir{
		{Ref: metadata.ReplicaRef{TopicID: isrTestTopic, Partition: 0}, Lost: true},
		{Ref: metadata.ReplicaRef{TopicID: isrTestTopic, Partition: 1}}, // another directory
		{Ref: unknownRef, Lost: true},
	})
	if err != nil || len(unknown) != 1 || !unknown[unknownRef] {
		t.Fatalf("unknown %v, err %v", unknown, err)
	}
	parts := q.Image().Topic("t").Partitions
	if p := parts[0]; p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) {
		t.Fatalf("the lost replica's partition: leader %d ISR %v, want 2 [2]", p.Leader, p.ISR)
	}
	if p := parts[1]; p.Leader != 1 || !slices.Equal(p.ISR, []int32{1, 2}) {
		t.Fatalf("a replica in another directory changed: leader %d ISR %v", p.Leader, p.ISR)
	}
	if _, err := c.AssignReplicasToDirs(ctx, 1, epoch+1, nil); !errors.Is(err, ErrStaleBrokerEpoch) {
		t.Fatalf("another broker epoch: %v", err)
	}
}
