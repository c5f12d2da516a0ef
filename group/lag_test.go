package group

import (
	"cmp"
	"slices"
	"testing"
)

// The shard lists every group's committed offsets, partitions without one left out.
func TestCommittedOffsets(t *testing.T) {
	h := newHarness(t, testConfig())
	h.commit(8, "a", "", -1, map[int32]int64{0: 500, 1: 7})
	h.commit(8, "b", "", -1, map[int32]int64{1: 0})
	got := h.s.CommittedOffsets()
	slices.SortFunc(got, func(x, y CommittedOffset) int {
		return cmp.Or(cmp.Compare(x.Group, y.Group), cmp.Compare(x.Partition, y.Partition))
	})
	want := []CommittedOffset{{"a", "t", 0, 500}, {"a", "t", 1, 7}, {"b", "t", 1, 0}}
	if !slices.Equal(got, want) {
		t.Fatalf("committed %+v, want %+v", got, want)
	}
	if got := newHarness(t, testConfig()).s.CommittedOffsets(); len(got) != 0 {
		t.Fatalf("no groups: %+v", got)
	}
}

// kafka_consumergroup_lag: end minus committed, never below 0; a partition whose end
// is unknown has no lag.
func TestLags(t *testing.T) {
	ends := map[string]int64{"t/0": 100, "t/1": 7, "t/2": 3, "u/0": 0}
	end := func(topic string, p int32) (int64, bool) {
		e, ok := ends[topic+"/"+string(rune('0'+p))]
		return e, ok
	}
	committed := []CommittedOffset{
		{"g", "t", 0, 40},  // behind: 60
		{"h", "t", 0, 100}, // caught up: 0
		{"g", "t", 1, 0},   // nothing consumed: the whole log
		{"g", "t", 2, 9},   // past the end (truncated log): 0
		{"g", "t", 3, 1},   // end unknown: left out
		{"g", "u", 0, 0},   // empty partition: 0
	}
	want := []PartitionLag{{"g", "t", 0, 60}, {"h", "t", 0, 0}, {"g", "t", 1, 7}, {"g", "t", 2, 0}, {"g", "u", 0, 0}}
	if got := Lags(committed, end); !slices.Equal(got, want) {
		t.Fatalf("lags %+v, want %+v", got, want)
	}
	if got := Lags(nil, end); len(got) != 0 {
		t.Fatalf("no offsets: %+v", got)
	}
}
