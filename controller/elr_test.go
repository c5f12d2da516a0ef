package controller

import (
	"context"
	"slices"
	"testing"

	"github.com/petrel-broker/petrel/metadata"
)

var elrTestTopic = metadata.UuidFromBytes([16]byte{7})

// startELRTest runs an active controller with eligible leader replicas on and
// min.insync.replicas 2 over: broker 1 unfenced, broker 2 fenced (down), topic t with
// partition 0 on [1,2], ISR [1,2], led by 1.
func startELRTest(t *testing.T) (*memQuorum, *Controller, context.Context) {
	t.Helper()
	return startActiveController(t, []metadata.Record{
		metadata.ClusterRecord{ClusterID: "elr"}, // an existing cluster: brokers register without feature ranges
		metadata.RegisterBrokerRecord{BrokerID: 1, IncarnationID: metadata.UuidFromBytes([16]byte{1})},
		metadata.RegisterBrokerRecord{BrokerID: 2, IncarnationID: metadata.UuidFromBytes([16]byte{2}), Fenced: true},
		metadata.TopicRecord{Name: "t", TopicID: elrTestTopic},
		metadata.PartitionRecord{TopicID: elrTestTopic, PartitionID: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1},
	}, elrMinISR2)
}

func elrOf(q *memQuorum) (elr, lastKnown []int32) {
	p := q.Image().Topic("t").Partitions[0]
	return p.ELR, p.LastKnownELR
}

// An ISR shrink below min ISR puts the replica in the ELR; a registration naming the
// epoch its clean shutdown recorded keeps it there, one after an unclean shutdown
// (PreviousBrokerEpoch -1) takes it out. LastKnownELR stays empty: it names a last
// leader only when the ISR empties (Kafka 4.2), and this partition keeps its leader.
func TestELR_ShrinkAndUncleanShutdown(t *testing.T) {
	q, c, ctx := startELRTest(t)
	outcomes, err := c.AlterISR(ctx, 1, -1, []ISRChange{{Topic: "t", Partition: 0, ISR: []int32{1}}})
	if err != nil || outcomes[0] != nil {
		t.Fatalf("AlterISR: %v %v", err, outcomes)
	}
	if elr, lk := elrOf(q); !slices.Equal(elr, []int32{2}) || lk != nil {
		t.Fatalf("after shrink: elr %v last known %v", elr, lk)
	}
	epoch := q.Image().Brokers[2].Epoch
	if _, err := c.Register(ctx, Registration{BrokerID: 2, Incarnation: metadata.UuidFromBytes([16]byte{3}), PreviousBrokerEpoch: epoch}); err != nil {
		t.Fatal(err)
	}
	if elr, _ := elrOf(q); !slices.Equal(elr, []int32{2}) {
		t.Fatalf("after a clean restart: elr %v", elr)
	}
	if _, err := c.Register(ctx, Registration{BrokerID: 2, Incarnation: metadata.UuidFromBytes([16]byte{4}), PreviousBrokerEpoch: -1}); err != nil {
		t.Fatal(err)
	}
	if elr, lk := elrOf(q); elr != nil || lk != nil {
		t.Fatalf("after an unclean restart: elr %v last known %v", elr, lk)
	}
}
