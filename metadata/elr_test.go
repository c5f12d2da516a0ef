package metadata

import (
	"encoding/json"
	"slices"
	"testing"
)

// elrImage has brokers 0, 1, 2, topic t with one partition on [0,1,2] led by 0 and
// eligible leader replicas on.
func elrImage(t *testing.T) *Image {
	return lastKnownImage(t, 0, 1, 2)
}

// elrInputs is min.insync.replicas 2, unclean elections as given.
func elrInputs(unclean bool, uncleanShutdown ...int32) ELRInputs {
	return ELRInputs{MinISR: func(string) int { return 2 }, Unclean: func(string) bool { return unclean },
		UncleanShutdown: uncleanShutdown}
}

// step applies an entry the way the controller writes it: through WithELR when the
// feature is on.
func step(t *testing.T, im *Image, off uint64, in ELRInputs, recs []Record) (*Image, []Record) {
	t.Helper()
	if ELREnabled(im) {
		recs = WithELR(im, recs, in)
	}
	return mustApply(t, im, off, recs...), recs
}

func wantPartition(t *testing.T, im *Image, leader int32, isr, elr, lastKnown []int32) {
	t.Helper()
	p := im.Topic("t").Partitions[0]
	if p.Leader != leader || !slices.Equal(p.ISR, isr) || !slices.Equal(p.ELR, elr) || !slices.Equal(p.LastKnownELR, lastKnown) {
		t.Fatalf("partition: leader %d isr %v elr %v lastKnownElr %v; want leader %d isr %v elr %v lastKnownElr %v",
			p.Leader, p.ISR, p.ELR, p.LastKnownELR, leader, isr, elr, lastKnown)
	}
}

// TestELR_CorrelatedFailureElectsCleanly is KIP-966's case: min.insync.replicas 2, RF 3;
// the replicas fail one after another. Replica 1 left the ISR while it was below min ISR
// (it holds every acknowledged record), so when it comes back it is elected cleanly,
// where Kafka 3's rule (the ISR only) leaves the partition leaderless until an unclean
// election.
func TestELR_CorrelatedFailureElectsCleanly(t *testing.T) {
	in := elrInputs(false)
	im := elrImage(t)
	im, _ = step(t, im, 2, in, FenceBrokerRecords(im, 2, in.Unclean))
	wantPartition(t, im, 0, []int32{0, 1}, nil, nil) // ISR at min ISR: no ELR
	im, _ = step(t, im, 3, in, FenceBrokerRecords(im, 1, in.Unclean))
	wantPartition(t, im, 0, []int32{0}, []int32{1}, nil) // 1 left below min ISR: eligible
	im, _ = step(t, im, 4, in, FenceBrokerRecords(im, 0, in.Unclean))
	wantPartition(t, im, -1, []int32{}, []int32{1, 0}, []int32{0}) // the last member leaves the ISR too; 0 last led

	// Kafka 3's rule on the same image: no ISR member is live, nothing is elected
	// without an unclean election.
	p := im.Topic("t").Partitions[0]
	acceptable := func(r int32) bool { return r == 1 }
	if leader, _ := ElectLeader(p, []int32{0}, acceptable, false); leader != -1 {
		t.Fatalf("ISR-only rule elected %d", leader)
	}
	if leader, unclean := ElectLeader(p, []int32{0}, acceptable, true); leader != 1 || !unclean {
		t.Fatalf("ISR-only rule with unclean: %d unclean=%v", leader, unclean)
	}

	var recs []Record
	im, recs = step(t, im, 5, in, UnfenceBrokerRecords(im, 1, in.Unclean))
	wantPartition(t, im, 1, []int32{1}, []int32{0}, nil)
	for _, r := range recs {
		if pc, ok := r.(PartitionChangeRecord); ok && pc.Unclean {
			t.Fatalf("ELR election written as unclean: %+v", pc)
		}
	}
	// Broker 0 comes back after an unclean shutdown: it leaves the ELR, which empties.
	im, _ = step(t, im, 6, elrInputs(false, 0), []Record{RegisterBrokerRecord{BrokerID: 0, Fenced: true}})
	wantPartition(t, im, 1, []int32{1}, nil, nil)
	// Broker 2 returns and catches up: the ISR back at min ISR.
	im, _ = step(t, im, 7, in, UnfenceBrokerRecords(im, 2, in.Unclean))
	wantPartition(t, im, 1, []int32{1}, nil, nil)
	isr := []int32{1, 2}
	im, _ = step(t, im, 8, in, []Record{PartitionChangeRecord{TopicID: Uuid{1}, PartitionID: 0, ISR: isr}})
	wantPartition(t, im, 1, isr, nil, nil)
}

// TestELR_UncleanOnlyWithoutEligibleReplica: with the ELR's members all down, an
// unclean election happens only where unclean.leader.election.enable allows it; an
// ELR member, once live, is preferred to it.
func TestELR_UncleanOnlyWithoutEligibleReplica(t *testing.T) {
	in := elrInputs(false)
	im := elrImage(t)
	im, _ = step(t, im, 2, in, FenceBrokerRecords(im, 2, nil))
	im, _ = step(t, im, 3, in, FenceBrokerRecords(im, 1, nil))
	im, _ = step(t, im, 4, in, FenceBrokerRecords(im, 0, nil))
	// Broker 2 (outside ISR and ELR) returns: no election without unclean.
	off := uint64(5)
	next, _ := step(t, im, off, in, UnfenceBrokerRecords(im, 2, in.Unclean))
	wantPartition(t, next, -1, []int32{}, []int32{1, 0}, []int32{0})
	// With unclean elections allowed it leads, flagged unclean; the ELR is cleared
	// (Kafka: an unclean election leaves no eligible replica behind).
	uncl := elrInputs(true)
	next, recs := step(t, im, off, uncl, UnfenceBrokerRecords(im, 2, uncl.Unclean))
	wantPartition(t, next, 2, []int32{2}, nil, nil)
	if !slices.ContainsFunc(recs, func(r Record) bool { pc, ok := r.(PartitionChangeRecord); return ok && pc.Unclean }) {
		t.Fatalf("unclean election not flagged: %+v", recs)
	}
	// An ELR member returning with unclean allowed is elected cleanly instead.
	next, recs = step(t, im, off, uncl, UnfenceBrokerRecords(im, 0, uncl.Unclean))
	wantPartition(t, next, 0, []int32{0}, []int32{1}, nil)
	if slices.ContainsFunc(recs, func(r Record) bool { pc, ok := r.(PartitionChangeRecord); return ok && pc.Unclean }) {
		t.Fatalf("ELR election flagged unclean: %+v", recs)
	}
}

// TestELR_Off: with the feature off, entries are as before (the last ISR member kept,
// no ELR).
func TestELR_Off(t *testing.T) {
	in := elrInputs(false)
	im := elrImage(t)
	im.Features = nil
	for i, id := range []int32{2, 1, 0} {
		im, _ = step(t, im, uint64(2+i), in, FenceBrokerRecords(im, id, nil))
	}
	wantPartition(t, im, -1, []int32{0}, nil, nil)
}

func TestTargetELR(t *testing.T) {
	for _, tc := range []struct {
		name             string
		isr, target, elr []int32
		unclean          []int32
		wantELR          []int32
	}{
		{name: "at min isr clears", isr: []int32{0, 1, 2}, target: []int32{0, 1}, elr: []int32{2}},
		{name: "below min isr joins", isr: []int32{0, 1}, target: []int32{0}, wantELR: []int32{1}},
		{name: "keeps members", isr: []int32{0}, target: []int32{}, elr: []int32{1}, wantELR: []int32{1, 0}},
		{name: "unclean shutdown leaves", isr: []int32{0}, target: []int32{0}, elr: []int32{1, 2}, unclean: []int32{2}, wantELR: []int32{1}},
		{name: "emptied", isr: []int32{1}, target: []int32{1}, elr: []int32{0}, unclean: []int32{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if elr := TargetELR(tc.isr, tc.target, tc.elr, 2, tc.unclean); !slices.Equal(elr, tc.wantELR) {
				t.Fatalf("got elr %v, want %v", elr, tc.wantELR)
			}
		})
	}
}

// TestELR_RecordsCompatible: a partition change written before the ELR fields decodes
// with them absent (unchanged), and the new fields round-trip, an empty list included.
func TestELR_RecordsCompatible(t *testing.T) {
	old := []byte(`[{"t":5,"v":0,"d":{"topicId":"AQAAAAAAAAAAAAAAAAAAAA","partitionId":0,"isr":[0,1]}}]`)
	recs, err := DecodeRecords(old)
	if err != nil {
		t.Fatal(err)
	}
	pc := recs[0].(PartitionChangeRecord)
	if pc.ELR != nil || pc.LastKnownELR != nil || pc.EmptyISR {
		t.Fatalf("old record decoded with ELR fields: %+v", pc)
	}
	empty, one := []int32{}, []int32{1}
	data, err := EncodeRecords(PartitionChangeRecord{TopicID: Uuid{1}, ELR: &empty, LastKnownELR: &one, EmptyISR: true})
	if err != nil {
		t.Fatal(err)
	}
	recs, err = DecodeRecords(data)
	if err != nil {
		t.Fatal(err)
	}
	pc = recs[0].(PartitionChangeRecord)
	if pc.ELR == nil || len(*pc.ELR) != 0 || !slices.Equal(*pc.LastKnownELR, one) || !pc.EmptyISR {
		t.Fatalf("round trip: %+v", pc)
	}
	// A snapshot keeps a partition's ELR.
	im := elrImage(t)
	p := *im.Topic("t").Partitions[0]
	p.ELR = []int32{2}
	snap, _ := json.Marshal(p)
	var back Partition
	if err := json.Unmarshal(snap, &back); err != nil || !slices.Equal(back.ELR, p.ELR) {
		t.Fatalf("snapshot: %s -> %+v (%v)", snap, back, err)
	}
}

// TestELR_AdminUncleanElection: an ElectLeaders UNCLEAN request is honoured with the
// ELR on whatever the topic's unclean.leader.election.enable (Kafka's
// Election.UNCLEAN): after the ELR and the last known leader, the first live replica.
func TestELR_AdminUncleanElection(t *testing.T) {
	in := minISR1(false)
	im := onlyInSyncReplicaLost(t, lastKnownImage(t, 0, 1, 2), 0, 2, 1)
	im, _ = step(t, im, 10, in, UnfenceBrokerRecords(im, 2, in.Unclean))
	wantPartition(t, im, -1, []int32{}, []int32{0}, []int32{0})
	tp := im.Topic("t")
	change, err := UncleanLeaderChange(im, tp, tp.Partitions[0])
	if err != nil {
		t.Fatal(err)
	}
	im, recs := step(t, im, 11, in, []Record{change})
	wantPartition(t, im, 2, []int32{2}, nil, nil)
	if pcs := partitionChanges(recs); len(pcs) != 1 || !pcs[0].Unclean {
		t.Fatalf("admin unclean election written as %+v", pcs)
	}
}
