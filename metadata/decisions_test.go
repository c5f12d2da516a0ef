package metadata

import (
	"slices"
	"testing"
)

// threeBrokerImage has brokers 0, 1, 2 and topic t with 4 partitions, RF 3, placed by
// Kafka's rule.
func threeBrokerImage(t *testing.T) *Image {
	im := NewImage()
	recs := []Record{RegisterBrokerRecord{BrokerID: 0}, RegisterBrokerRecord{BrokerID: 1}, RegisterBrokerRecord{BrokerID: 2}}
	assignment, err := AssignReplicas([]int32{0, 1, 2}, 4, 3, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	recs = append(recs, createTopicRecords("t", 1, assignment...)...)
	return mustApply(t, im, 1, recs...)
}

func TestFenceBrokerRecords(t *testing.T) {
	im := threeBrokerImage(t)
	im = mustApply(t, im, 2, FenceBrokerRecords(im, 2, nil)...)
	if !im.Brokers[2].Fenced {
		t.Fatal("broker 2 not fenced")
	}
	for _, p := range im.Topic("t").Partitions {
		if slices.Contains(p.ISR, 2) {
			t.Fatalf("partition %d ISR %v still lists 2", p.ID, p.ISR)
		}
		if p.Leader == 2 || p.Leader < 0 {
			t.Fatalf("partition %d leader %d", p.ID, p.Leader)
		}
		// The new leader is the first replica in assignment order that is in the ISR.
		for _, r := range p.Replicas {
			if slices.Contains(p.ISR, r) {
				if p.Leader != r {
					t.Fatalf("partition %d: leader %d, first eligible replica %d (replicas %v)", p.ID, p.Leader, r, p.Replicas)
				}
				break
			}
		}
	}
	// Partition 2 was led by broker 2 ({2,0,1}): its leader epoch grew.
	if p := im.Topic("t").Partitions[2]; p.LeaderEpoch != 1 || p.Leader != 0 {
		t.Fatalf("partition 2 after fencing: %+v", p)
	}
	// Partition 0 ({0,1,2}) kept its leader: leader epoch unchanged, partition epoch +1.
	if p := im.Topic("t").Partitions[0]; p.LeaderEpoch != 0 || p.PartitionEpoch != 1 {
		t.Fatalf("partition 0 after fencing: %+v", p)
	}
	// Fencing the others too: the last ISR member is kept, leader -1.
	im = mustApply(t, im, 3, FenceBrokerRecords(im, 0, nil)...)
	im = mustApply(t, im, 4, FenceBrokerRecords(im, 1, nil)...)
	for _, p := range im.Topic("t").Partitions {
		if p.Leader != -1 || len(p.ISR) != 1 {
			t.Fatalf("all fenced: partition %+v", p)
		}
	}
	// Unfencing the last ISR member of a partition makes it leader again.
	last := im.Topic("t").Partitions[0].ISR[0]
	im = mustApply(t, im, 5, UnfenceBrokerRecords(im, last, nil)...)
	if p := im.Topic("t").Partitions[0]; p.Leader != last {
		t.Fatalf("after unfencing %d: %+v", last, p)
	}
}

func TestFenceWithUncleanElection(t *testing.T) {
	im := NewImage()
	im = mustApply(t, im, 1, RegisterBrokerRecord{BrokerID: 0}, RegisterBrokerRecord{BrokerID: 1},
		TopicRecord{Name: "u", TopicID: Uuid{9}},
		PartitionRecord{TopicID: Uuid{9}, Replicas: []int32{0, 1}, ISR: []int32{0}, Leader: 0})
	im = mustApply(t, im, 2, FenceBrokerRecords(im, 0, func(string) bool { return true })...)
	if p := im.Topic("u").Partitions[0]; p.Leader != 1 || !slices.Equal(p.ISR, []int32{1}) {
		t.Fatalf("unclean election: %+v", p)
	}
}
