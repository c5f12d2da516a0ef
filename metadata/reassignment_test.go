package metadata

import (
	"errors"
	"slices"
	"testing"
)

// fourBrokerImage has brokers 0-3 and topic t with one partition on {0,1,2}, led by 0.
func fourBrokerImage(t *testing.T) *Image {
	im := NewImage()
	recs := []Record{RegisterBrokerRecord{BrokerID: 0}, RegisterBrokerRecord{BrokerID: 1},
		RegisterBrokerRecord{BrokerID: 2}, RegisterBrokerRecord{BrokerID: 3}}
	recs = append(recs, createTopicRecords("t", 1, []int32{0, 1, 2})...)
	return mustApply(t, im, 1, recs...)
}

func addToISR(t *testing.T, im *Image, offset uint64, ids ...int32) *Image {
	tp := im.Topic("t")
	p := tp.Partitions[0]
	return mustApply(t, im, offset, PartitionChangeRecord{TopicID: tp.ID, PartitionID: 0, ISR: append(slices.Clone(p.ISR), ids...)})
}

func TestReassignmentMovesLeaderAndCompletes(t *testing.T) {
	im := fourBrokerImage(t)
	tp := im.Topic("t")
	recs, err := StartReassignmentRecords(im, tp, tp.Partitions[0], []int32{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	im = mustApply(t, im, 2, recs...)
	p := im.Topic("t").Partitions[0]
	if !slices.Equal(p.Replicas, []int32{1, 2, 3, 0}) || !slices.Equal(p.Adding, []int32{3}) || !slices.Equal(p.Removing, []int32{0}) {
		t.Fatalf("started: %+v", p)
	}
	if !slices.Equal(p.OriginalReplicas(), []int32{1, 2, 0}) && !slices.Equal(p.OriginalReplicas(), []int32{0, 1, 2}) {
		t.Fatalf("OAR %v", p.OriginalReplicas())
	}
	if got := CompleteReassignmentRecords(im); len(got) != 0 {
		t.Fatalf("completed before 3 is in sync: %+v", got)
	}
	im = addToISR(t, im, 3, 3)
	im = mustApply(t, im, 4, CompleteReassignmentRecords(im)...)
	p = im.Topic("t").Partitions[0]
	if !slices.Equal(p.Replicas, []int32{1, 2, 3}) || p.Reassigning() || slices.Contains(p.ISR, 0) || p.Leader != 1 || p.LeaderEpoch != 1 {
		t.Fatalf("completed: %+v", p)
	}
}

func TestReassignmentCancel(t *testing.T) {
	im := fourBrokerImage(t)
	tp := im.Topic("t")
	if _, err := CancelReassignmentRecords(im, tp, tp.Partitions[0]); !errors.Is(err, ErrNoReassignmentInProgress) {
		t.Fatalf("cancel without reassignment: %v", err)
	}
	recs, _ := StartReassignmentRecords(im, tp, tp.Partitions[0], []int32{1, 2, 3})
	im = mustApply(t, im, 2, recs...)
	im = addToISR(t, im, 3, 3)
	// Only the leader step is missing; cancel instead.
	tp = im.Topic("t")
	recs, err := CancelReassignmentRecords(im, tp, tp.Partitions[0])
	if err != nil {
		t.Fatal(err)
	}
	im = mustApply(t, im, 4, recs...)
	p := im.Topic("t").Partitions[0]
	if !slices.Equal(p.Replicas, []int32{0, 1, 2}) && !slices.Equal(p.Replicas, []int32{1, 2, 0}) {
		t.Fatalf("cancelled replicas %v", p.Replicas)
	}
	if p.Reassigning() || slices.Contains(p.ISR, 3) || p.Leader != 0 {
		t.Fatalf("cancelled: %+v", p)
	}
}

func TestReassignmentShrinkCompletesAtOnceAndReplaces(t *testing.T) {
	im := fourBrokerImage(t)
	tp := im.Topic("t")
	// Dropping a replica adds nothing: done in the same entry.
	recs, err := StartReassignmentRecords(im, tp, tp.Partitions[0], []int32{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	im = mustApply(t, im, 2, recs...)
	if p := im.Topic("t").Partitions[0]; !slices.Equal(p.Replicas, []int32{1, 2}) || p.Reassigning() || p.Leader != 1 {
		t.Fatalf("shrunk: %+v", p)
	}
	// A new target replaces a running reassignment.
	tp = im.Topic("t")
	recs, _ = StartReassignmentRecords(im, tp, tp.Partitions[0], []int32{2, 3})
	im = mustApply(t, im, 3, recs...)
	tp = im.Topic("t")
	recs, _ = StartReassignmentRecords(im, tp, tp.Partitions[0], []int32{0, 2})
	im = mustApply(t, im, 4, recs...)
	p := im.Topic("t").Partitions[0]
	if !slices.Equal(p.Replicas, []int32{0, 2, 1}) || !slices.Equal(p.Adding, []int32{0}) || !slices.Equal(p.Removing, []int32{1}) {
		t.Fatalf("replaced: %+v", p)
	}
	// Bad targets.
	for _, target := range [][]int32{nil, {1, 1}, {-1}, {9}} {
		if _, err := StartReassignmentRecords(im, tp, p, target); !errors.Is(err, ErrInvalidReplicaAssignment) {
			t.Fatalf("target %v: %v", target, err)
		}
	}
}
