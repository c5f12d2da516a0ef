package controller

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/petrel-broker/petrel/metadata"
)

var registrationTestTopic = metadata.UuidFromBytes([16]byte{9})

// startRegistrationTest runs an active controller over brokers 1 and 2, both unfenced at
// broker epoch 1, as a whole-cluster stop leaves them (the controller moved nothing),
// and topic t: partition 0 led by 1 and partition 1 led by 2, ISR [1,2] and [2,1],
// and partition 2 on broker 2 alone without a leader.
func startRegistrationTest(t *testing.T) (*memQuorum, *Controller, context.Context) {
	t.Helper()
	return startActiveController(t, []metadata.Record{
		metadata.ClusterRecord{ClusterID: "reg"},
		metadata.RegisterBrokerRecord{BrokerID: 1, IncarnationID: metadata.UuidFromBytes([16]byte{1})},
		metadata.RegisterBrokerRecord{BrokerID: 2, IncarnationID: metadata.UuidFromBytes([16]byte{2})},
		metadata.TopicRecord{Name: "t", TopicID: registrationTestTopic},
		metadata.PartitionRecord{TopicID: registrationTestTopic, PartitionID: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1},
		metadata.PartitionRecord{TopicID: registrationTestTopic, PartitionID: 1, Replicas: []int32{2, 1}, ISR: []int32{2, 1}, Leader: 2},
		metadata.PartitionRecord{TopicID: registrationTestTopic, PartitionID: 2, Replicas: []int32{2}, ISR: []int32{2}, Leader: -1},
	})
}

// A broker that comes back on the data directory its clean shutdown closed at the
// registered epoch, in place of an incarnation the controller never fenced (the whole
// cluster stopped at once), resumes unfenced in one record: no partition changes
// leader, leader epoch or ISR, and a leaderless partition whose ISR holds it is
// elected in the same entry.
func TestRegisterAfterCleanShutdownResumesUnfenced(t *testing.T) {
	q, c, ctx := startRegistrationTest(t)
	before := q.Image()
	old := before.Brokers[2]
	epoch, err := c.Register(ctx, Registration{BrokerID: 2, Incarnation: metadata.UuidFromBytes([16]byte{3}),
		Previous: old.IncarnationID, PreviousBrokerEpoch: old.Epoch})
	if err != nil {
		t.Fatal(err)
	}
	im := q.Image()
	now := im.Brokers[2]
	if now.Fenced || now.IncarnationID != metadata.UuidFromBytes([16]byte{3}) || now.Epoch != epoch || epoch <= old.Epoch {
		t.Fatalf("broker 2 after a clean restart: %+v (epoch %d), before %+v", now, epoch, old)
	}
	if im.Offset != before.Offset+1 {
		t.Fatalf("the registration took %d entries, want one", im.Offset-before.Offset)
	}
	for id := range 2 {
		p, was := im.Topic("t").Partitions[id], before.Topic("t").Partitions[id]
		if p.Leader != was.Leader || p.LeaderEpoch != was.LeaderEpoch || p.PartitionEpoch != was.PartitionEpoch || !slices.Equal(p.ISR, was.ISR) {
			t.Errorf("t-%d changed by a clean restart: %+v, was %+v", id, p, was)
		}
	}
	if p := im.Topic("t").Partitions[2]; p.Leader != 2 {
		t.Errorf("leaderless t-2 with broker 2 in its ISR: leader %d after broker 2 resumed", p.Leader)
	}
}

// Without the evidence of a clean shutdown at the registered epoch, the old incarnation
// is fenced in the registration's entry as before: out of every ISR it shared and of
// its leaderships, and the new one registered fenced until it catches up.
func TestRegisterAfterUncleanShutdownFencesTheOldIncarnation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		epoch func(old *metadata.Broker) int64
	}{
		{"no clean shutdown marker", func(*metadata.Broker) int64 { return -1 }},
		{"a marker of another epoch", func(old *metadata.Broker) int64 { return old.Epoch - 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, c, ctx := startRegistrationTest(t)
			old := q.Image().Brokers[2]
			if _, err := c.Register(ctx, Registration{BrokerID: 2, Incarnation: metadata.UuidFromBytes([16]byte{3}),
				Previous: old.IncarnationID, PreviousBrokerEpoch: tc.epoch(old)}); err != nil {
				t.Fatal(err)
			}
			im := q.Image()
			if !im.Brokers[2].Fenced {
				t.Fatalf("broker 2 after an unclean restart: %+v", im.Brokers[2])
			}
			p0, p1 := im.Topic("t").Partitions[0], im.Topic("t").Partitions[1]
			if !slices.Equal(p0.ISR, []int32{1}) || p1.Leader != 1 || p1.LeaderEpoch <= 0 || !slices.Equal(p1.ISR, []int32{1}) {
				t.Fatalf("after broker 2's unclean restart: t-0 %+v, t-1 %+v", p0, p1)
			}
		})
	}
}

// A clean shutdown's epoch does not let a registration that does not name the
// registered incarnation as its previous one replace it while its session is valid
// (Kafka's DUPLICATE_BROKER_REGISTRATION): it may be another directory claiming the id.
func TestRegisterCleanEpochWithoutPreviousIncarnationIsDuplicate(t *testing.T) {
	q, c, ctx := startRegistrationTest(t)
	old := q.Image().Brokers[2]
	_, err := c.Register(ctx, Registration{BrokerID: 2, Incarnation: metadata.UuidFromBytes([16]byte{3}), PreviousBrokerEpoch: old.Epoch})
	if !errors.Is(err, ErrDuplicateBrokerRegistration) {
		t.Fatalf("Register: %v, want ErrDuplicateBrokerRegistration", err)
	}
	if q.Image().Brokers[2].IncarnationID != old.IncarnationID {
		t.Fatal("the registration replaced the registered incarnation")
	}
}

// With eligible leader replicas on, a broker that resumes after a clean shutdown is
// elected from the ELR of a partition with an empty ISR and no leader, as at an unfence
// (metadata.WithELR rescans an entry that registers a broker unfenced).
func TestRegisterAfterCleanShutdownElectsFromTheELR(t *testing.T) {
	q, c, ctx := startActiveController(t, []metadata.Record{
		metadata.ClusterRecord{ClusterID: "reg"},
		metadata.RegisterBrokerRecord{BrokerID: 1, IncarnationID: metadata.UuidFromBytes([16]byte{1}), Fenced: true},
		metadata.RegisterBrokerRecord{BrokerID: 2, IncarnationID: metadata.UuidFromBytes([16]byte{2})},
		metadata.TopicRecord{Name: "t", TopicID: registrationTestTopic},
		metadata.PartitionRecord{TopicID: registrationTestTopic, PartitionID: 0, Replicas: []int32{1, 2}, ISR: []int32{}, Leader: -1, ELR: []int32{2}},
	}, elrMinISR2)
	old := q.Image().Brokers[2]
	if _, err := c.Register(ctx, Registration{BrokerID: 2, Incarnation: metadata.UuidFromBytes([16]byte{3}),
		Previous: old.IncarnationID, PreviousBrokerEpoch: old.Epoch}); err != nil {
		t.Fatal(err)
	}
	im := q.Image()
	if im.Brokers[2].Fenced {
		t.Fatalf("broker 2 after a clean restart: %+v", im.Brokers[2])
	}
	if p := im.Topic("t").Partitions[0]; p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) || len(p.ELR) != 0 {
		t.Fatalf("t-0 after broker 2, its ELR member, resumed: %+v", p)
	}
}
