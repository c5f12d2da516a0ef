package metadata

import (
	"slices"
	"testing"
)

// TestControlledShutdownRecords: the first entry moves every leadership of the stopping
// broker, even past the bound; later entries take it out of the other ISRs, at most max
// records each, and every partition changes once.
func TestControlledShutdownRecords(t *testing.T) {
	im := NewImage()
	recs := []Record{RegisterBrokerRecord{BrokerID: 0}, RegisterBrokerRecord{BrokerID: 1}, RegisterBrokerRecord{BrokerID: 2}}
	assignment, err := AssignReplicas([]int32{0, 1, 2}, 30, 3, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	recs = append(recs, createTopicRecords("t", 1, assignment...)...)
	im = mustApply(t, im, 1, recs...)
	before := im.Topic("t").Partitions
	led := im.LeaderCount(2)
	if led < 6 {
		t.Fatalf("broker 2 leads %d partitions, want at least 6 for the test", led)
	}
	const max = 5
	offset := uint64(2)
	entries := 0
	for more := true; more; {
		var records []Record
		records, more = ControlledShutdownRecords(im, 2, max)
		if entries == 0 && len(records) != led {
			t.Fatalf("first entry of %d records, want the %d leadership moves (past the bound %d)", len(records), led, max)
		}
		if entries > 0 && (len(records) > max || len(records) == 0 && more) {
			t.Fatalf("entry %d of %d records, more=%v (bound %d)", entries, len(records), more, max)
		}
		im = mustApply(t, im, offset, records...)
		offset++
		if entries == 0 && im.LeaderCount(2) != 0 {
			t.Fatalf("broker 2 still leads %d partitions after the first entry", im.LeaderCount(2))
		}
		entries++
		if entries > 30 {
			t.Fatal("no end to the entries")
		}
	}
	if entries < 3 {
		t.Fatalf("%d entries, want the ISR changes spread over several", entries)
	}
	for i, p := range im.Topic("t").Partitions {
		was := before[i]
		if slices.Contains(p.ISR, 2) || p.Leader == 2 {
			t.Errorf("partition %d: leader %d ISR %v still holds broker 2", i, p.Leader, p.ISR)
		}
		if p.PartitionEpoch != was.PartitionEpoch+1 {
			t.Errorf("partition %d: partition epoch %d, was %d: want one change", i, p.PartitionEpoch, was.PartitionEpoch)
		}
	}
	if records, more := ControlledShutdownRecords(im, 2, max); len(records) != 0 || more {
		t.Fatalf("after the shutdown: %d records, more=%v", len(records), more)
	}
}
