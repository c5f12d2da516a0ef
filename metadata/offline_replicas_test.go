package metadata

import (
	"slices"
	"testing"
)

// TestOfflineReplicaRecords: a reported replica leaves the ISR and, where it led, hands
// leadership to the next ISR member in assignment order; a partition it is not in and an
// unknown partition change nothing; the last ISR member stays and the leader becomes -1.
func TestOfflineReplicaRecords(t *testing.T) {
	im := threeBrokerImage(t) // topic t: partition 0 is {0,1,2} led by 0, partition 1 {1,2,0}
	tp := im.Topic("t")
	refs := []ReplicaRef{{tp.ID, 0}, {tp.ID, 1}, {tp.ID, 0}, {tp.ID, 99}, {Uuid{1}, 0}}
	next := mustApply(t, im, im.Offset+1, OfflineReplicaRecords(im, 0, refs, nil)...)
	p0, p1 := next.Topic("t").Partitions[0], next.Topic("t").Partitions[1]
	if p0.Leader != 1 || slices.Contains(p0.ISR, 0) || p0.LeaderEpoch != tp.Partitions[0].LeaderEpoch+1 {
		t.Fatalf("partition 0: leader %d ISR %v epoch %d", p0.Leader, p0.ISR, p0.LeaderEpoch)
	}
	if p1.Leader != tp.Partitions[1].Leader || slices.Contains(p1.ISR, 0) {
		t.Fatalf("partition 1: leader %d ISR %v", p1.Leader, p1.ISR)
	}
	if again := OfflineReplicaRecords(next, 0, refs, nil); len(again) != 0 {
		t.Fatalf("a repeated report changed %d partitions", len(again))
	}
	// Down to the last ISR member: it stays, and the partition has no leader.
	last := mustApply(t, next, next.Offset+1, OfflineReplicaRecords(next, 2, []ReplicaRef{{tp.ID, 0}}, nil)...)
	last = mustApply(t, last, last.Offset+1, OfflineReplicaRecords(last, 1, []ReplicaRef{{tp.ID, 0}}, nil)...)
	if p := last.Topic("t").Partitions[0]; p.Leader != -1 || !slices.Equal(p.ISR, []int32{1}) {
		t.Fatalf("last member: leader %d ISR %v, want -1 [1]", p.Leader, p.ISR)
	}
}
