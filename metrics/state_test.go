package metrics

import "testing"

// TestSnapshotCounts: a leader's ISR below its replica set is under-replicated, below
// min.insync.replicas under min ISR (an unknown minimum, 0, never); the largest
// follower lag is MaxLag; partitions without a leader are offline; brokers count as
// fenced or active.
func TestSnapshotCounts(t *testing.T) {
	cases := []struct {
		isr, rf, minInsync int
		under, underMin    bool
	}{
		{3, 3, 2, false, false},
		{2, 3, 2, true, false},
		{1, 3, 2, true, true},
		{1, 3, 0, true, false},
	}
	for _, c := range cases {
		var p PartitionState
		p.LeaderISR(c.isr, c.rf, c.minInsync)
		if p.UnderReplicated != c.under || p.UnderMinISR != c.underMin {
			t.Errorf("ISR %d of %d, min %d: under-replicated %v, under min ISR %v", c.isr, c.rf, c.minInsync, p.UnderReplicated, p.UnderMinISR)
		}
	}
	var s Snapshot
	s.AddReplica(PartitionState{Topic: "t"}, 5)
	s.AddReplica(PartitionState{Topic: "t", Partition: 1}, 2)
	for _, leader := range []int32{0, -1, 2, -1} {
		s.CountPartition(leader)
	}
	for _, fenced := range []bool{true, false, false} {
		s.CountBroker(fenced)
	}
	if len(s.Partitions) != 2 || s.MaxLag != 5 || s.GlobalPartitions != 4 || s.OfflinePartitions != 2 ||
		s.FencedBrokers != 1 || s.ActiveBrokers != 2 {
		t.Errorf("snapshot counts: %+v", s)
	}
}
