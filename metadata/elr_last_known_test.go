package metadata

import (
	"slices"
	"testing"
)

// lastKnownImage has brokers 0, 1, 2 and topic t with one partition on replicas, led by
// the first, eligible leader replicas on.
func lastKnownImage(t *testing.T, replicas ...int32) *Image {
	im := NewImage()
	recs := []Record{RegisterBrokerRecord{BrokerID: 0}, RegisterBrokerRecord{BrokerID: 1}, RegisterBrokerRecord{BrokerID: 2}}
	recs = append(recs, createTopicRecords("t", 1, replicas)...)
	im = mustApply(t, im, 1, recs...)
	im.Features = map[string]int16{FeatureEligibleLeaderReplicasVersion: 1}
	return im
}

// minISR1 is Kafka's default min.insync.replicas (1), unclean elections as given.
func minISR1(unclean bool, uncleanShutdown ...int32) ELRInputs {
	return ELRInputs{MinISR: func(string) int { return 1 }, Unclean: func(string) bool { return unclean },
		UncleanShutdown: uncleanShutdown}
}

// onlyInSyncReplicaLost fences, in turn, every replica of t but last and then last
// (the only in-sync replica left, the leader), and returns the image with the
// partition leaderless: ISR empty, ELR [last], LastKnownELR [last].
func onlyInSyncReplicaLost(t *testing.T, im *Image, last int32, others ...int32) *Image {
	t.Helper()
	in := minISR1(false)
	off := uint64(2)
	for _, id := range append(others, last) {
		im, _ = step(t, im, off, in, FenceBrokerRecords(im, id, in.Unclean))
		off++
	}
	wantPartition(t, im, -1, []int32{}, []int32{last}, []int32{last})
	return im
}

// registerUnclean applies broker id's registration after an unclean shutdown (kill -9):
// it leaves every ELR.
func registerUnclean(t *testing.T, im *Image, off uint64, id int32, in ELRInputs) (*Image, []Record) {
	t.Helper()
	in.UncleanShutdown = []int32{id}
	return step(t, im, off, in, []Record{RegisterBrokerRecord{BrokerID: id, Fenced: true}})
}

func partitionChanges(recs []Record) []PartitionChangeRecord {
	var out []PartitionChangeRecord
	for _, r := range recs {
		if pc, ok := r.(PartitionChangeRecord); ok {
			out = append(out, pc)
		}
	}
	return out
}

// TestELR_LastKnownLeaderAfterUncleanShutdown is Kafka 4.2's balanced recovery: the only
// in-sync replica (the leader) is killed; its fencing empties the ISR, puts it in the
// ELR and makes it the last known leader; its registration after the unclean shutdown
// takes it out of the ELR (both lists empty, nobody safely electable) but keeps it as
// the last known leader; when it is unfenced it is elected, as an unclean election
// (ISR of itself), and LastKnownELR is cleared. Another replica returning first is not
// elected.
func TestELR_LastKnownLeaderAfterUncleanShutdown(t *testing.T) {
	in := minISR1(false)
	im := onlyInSyncReplicaLost(t, lastKnownImage(t, 0, 1, 2), 0, 2, 1)

	im, recs := registerUnclean(t, im, 10, 0, in)
	wantPartition(t, im, -1, []int32{}, nil, []int32{0})
	if pcs := partitionChanges(recs); len(pcs) != 1 || pcs[0].Leader != nil {
		t.Fatalf("registration elected or wrote %+v", pcs)
	}

	// Replica 1 (neither in the ISR nor in the ELR) returns first: not elected, and no
	// partition change is written for it.
	im, recs = step(t, im, 11, in, UnfenceBrokerRecords(im, 1, in.Unclean))
	wantPartition(t, im, -1, []int32{}, nil, []int32{0})
	if pcs := partitionChanges(recs); len(pcs) != 0 {
		t.Fatalf("unfencing 1 wrote %+v", pcs)
	}

	// The last known leader returns: elected, unclean, ISR of itself, list cleared.
	epoch := im.Topic("t").Partitions[0].LeaderEpoch
	im, recs = step(t, im, 12, in, UnfenceBrokerRecords(im, 0, in.Unclean))
	wantPartition(t, im, 0, []int32{0}, nil, nil)
	pcs := partitionChanges(recs)
	if len(pcs) != 1 || !pcs[0].Unclean || pcs[0].Leader == nil || *pcs[0].Leader != 0 {
		t.Fatalf("last known leader's election written as %+v", pcs)
	}
	if got := im.Topic("t").Partitions[0].LeaderEpoch; got != epoch+1 {
		t.Fatalf("leader epoch %d, want %d", got, epoch+1)
	}
}

// TestELR_LastKnownLeaderRF1: a single-replica partition (the case that left
// kill -9 tests leaderless): the restarted replica leads again.
func TestELR_LastKnownLeaderRF1(t *testing.T) {
	in := minISR1(false)
	im := onlyInSyncReplicaLost(t, lastKnownImage(t, 1), 1)
	im, _ = registerUnclean(t, im, 10, 1, in)
	wantPartition(t, im, -1, []int32{}, nil, []int32{1})
	im, _ = step(t, im, 11, in, UnfenceBrokerRecords(im, 1, in.Unclean))
	wantPartition(t, im, 1, []int32{1}, nil, nil)
}

// TestELR_CleanRestartOfOnlyInSyncReplica: after a clean shutdown the replica stays in
// the ELR and is elected cleanly from it on its return (no unclean flag).
func TestELR_CleanRestartOfOnlyInSyncReplica(t *testing.T) {
	in := minISR1(false)
	im := onlyInSyncReplicaLost(t, lastKnownImage(t, 0, 1, 2), 0, 2, 1)
	im, _ = step(t, im, 10, in, []Record{RegisterBrokerRecord{BrokerID: 0, Fenced: true}}) // clean: no unclean shutdown
	wantPartition(t, im, -1, []int32{}, []int32{0}, []int32{0})
	im, recs := step(t, im, 11, in, UnfenceBrokerRecords(im, 0, in.Unclean))
	wantPartition(t, im, 0, []int32{0}, nil, nil)
	if pcs := partitionChanges(recs); len(pcs) != 1 || pcs[0].Unclean {
		t.Fatalf("ELR election written as %+v", pcs)
	}
}

// TestELR_LastKnownLeaderBeforeUncleanElection: with unclean.leader.election.enable a
// replica returning before the last known leader is elected uncleanly (Kafka: the last
// known leader is fenced, so not electable, and the unclean election comes next), and
// the last known leader is forgotten; but where the last known leader is back, it is
// elected before the unclean choice, although that one comes first in assignment
// order.
func TestELR_LastKnownLeaderBeforeUncleanElection(t *testing.T) {
	uncl := minISR1(true)
	// Replicas [1,0,2]: 1 is the preferred (first) replica, 0 the one that leads last.
	base := onlyInSyncReplicaLost(t, lastKnownImage(t, 1, 0, 2), 0, 2, 1)
	base, _ = registerUnclean(t, base, 10, 0, minISR1(false))

	im, recs := step(t, base, 11, uncl, UnfenceBrokerRecords(base, 1, uncl.Unclean))
	wantPartition(t, im, 1, []int32{1}, nil, nil)
	if pcs := partitionChanges(recs); len(pcs) != 1 || !pcs[0].Unclean {
		t.Fatalf("unclean election written as %+v", pcs)
	}

	// Without unclean elections 1 returns first and nothing happens; then 0 returns
	// with unclean elections turned on: 0, the last known leader, leads, not 1.
	im, _ = step(t, base, 11, minISR1(false), UnfenceBrokerRecords(base, 1, nil))
	wantPartition(t, im, -1, []int32{}, nil, []int32{0})
	im, _ = step(t, im, 12, uncl, UnfenceBrokerRecords(im, 0, uncl.Unclean))
	wantPartition(t, im, 0, []int32{0}, nil, nil)
}

// TestELR_FencedLastKnownLeaderNotElected (KAFKA-19522): a change that leaves the ISR
// and the ELR empty while the last known leader is fenced elects nobody; here the last
// ELR member's unclean registration empties the ELR of a partition whose last known
// leader is still down. When the last known leader is live, the same change elects it.
func TestELR_FencedLastKnownLeaderNotElected(t *testing.T) {
	in := elrInputs(false) // min ISR 2
	im := elrImage(t)
	for i, id := range []int32{2, 1, 0} {
		im, _ = step(t, im, uint64(2+i), in, FenceBrokerRecords(im, id, nil))
	}
	wantPartition(t, im, -1, []int32{}, []int32{1, 0}, []int32{0})
	im, _ = registerUnclean(t, im, 10, 0, in)
	wantPartition(t, im, -1, []int32{}, []int32{1}, []int32{0})
	// 0 is back, but 1 is still an eligible leader replica: 0 is not elected.
	im, _ = step(t, im, 11, in, UnfenceBrokerRecords(im, 0, nil))
	wantPartition(t, im, -1, []int32{}, []int32{1}, []int32{0})
	// 1 re-registers after an unclean shutdown: the ELR empties and 0, the live last
	// known leader, is elected in the same entry.
	next, _ := registerUnclean(t, im, 12, 1, in)
	wantPartition(t, next, 0, []int32{0}, nil, nil)

	// The same with 0 fenced again first: nobody is elected.
	im, _ = step(t, im, 12, in, []Record{FenceBrokerRecord{BrokerID: 0, BrokerEpoch: im.Brokers[0].Epoch}})
	im, _ = registerUnclean(t, im, 13, 1, in)
	wantPartition(t, im, -1, []int32{}, nil, []int32{0})
}

// TestELR_ISRMemberBeforeELRMember: an ELR member may lead only while the ISR is empty
// (Kafka's isValidNewLeader): when the leader is fenced, the live ISR member succeeds
// it, not the live ELR member ahead of it in assignment order.
func TestELR_ISRMemberBeforeELRMember(t *testing.T) {
	in := ELRInputs{MinISR: func(string) int { return 3 }}
	im := elrImage(t) // [0,1,2], led by 0
	// 1 falls behind (live): below min ISR 3 it joins the ELR.
	im, _ = step(t, im, 2, in, []Record{PartitionChangeRecord{TopicID: Uuid{1}, PartitionID: 0, ISR: []int32{0, 2}}})
	wantPartition(t, im, 0, []int32{0, 2}, []int32{1}, nil)
	im, _ = step(t, im, 3, in, FenceBrokerRecords(im, 0, nil))
	wantPartition(t, im, 2, []int32{2}, []int32{1, 0}, nil)
}

// TestLastKnownLeader is the LastKnownELR rule alone.
func TestLastKnownLeader(t *testing.T) {
	for _, tc := range []struct {
		name         string
		p            Partition
		nextISR      []int32
		nextLeader   int32
		wantLastKnow []int32
	}{
		{name: "isr empties: the leader", p: Partition{ISR: []int32{3}, Leader: 3}, nextISR: []int32{}, nextLeader: -1, wantLastKnow: []int32{3}},
		{name: "isr empties again: kept", p: Partition{ISR: []int32{3}, Leader: 3, LastKnownELR: []int32{3}}, nextISR: nil, nextLeader: -1, wantLastKnow: []int32{3}},
		{name: "isr empties without a leader: kept", p: Partition{ISR: []int32{3}, Leader: -1, LastKnownELR: []int32{2}}, nextLeader: -1, wantLastKnow: []int32{2}},
		{name: "leaderless stays", p: Partition{ISR: []int32{}, Leader: -1, LastKnownELR: []int32{3}}, nextLeader: -1, wantLastKnow: []int32{3}},
		{name: "a leader clears", p: Partition{ISR: []int32{}, Leader: -1, LastKnownELR: []int32{3}}, nextISR: []int32{1}, nextLeader: 1},
		{name: "a kept leader clears an old list", p: Partition{ISR: []int32{1}, Leader: 1, LastKnownELR: []int32{0, 2}}, nextISR: []int32{1}, nextLeader: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := LastKnownLeader(&tc.p, tc.nextISR, tc.nextLeader); !slices.Equal(got, tc.wantLastKnow) {
				t.Fatalf("got %v, want %v", got, tc.wantLastKnow)
			}
		})
	}
}
