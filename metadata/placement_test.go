package metadata

import (
	"errors"
	"reflect"
	"testing"
)

func TestAssignReplicasKafkaRule(t *testing.T) {
	brokers := []int32{0, 1, 2, 3, 4}
	// Kafka's documented example (AdminUtils): 5 brokers, 10 partitions, RF 3, startIndex 0,
	// nextReplicaShift 0.
	got, err := AssignReplicas(brokers, 10, 3, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int32{
		{0, 1, 2}, {1, 2, 3}, {2, 3, 4}, {3, 4, 0}, {4, 0, 1},
		{0, 2, 3}, {1, 3, 4}, {2, 4, 0}, {3, 0, 1}, {4, 1, 2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

func TestAssignReplicasBalancedAndValid(t *testing.T) {
	brokers := []int32{0, 1, 2}
	got, err := AssignReplicas(brokers, 4, 3, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	leaders := map[int32]int{}
	for _, r := range got {
		leaders[r[0]]++
		seen := map[int32]bool{}
		for _, b := range r {
			if seen[b] {
				t.Fatalf("duplicate replica in %v", r)
			}
			seen[b] = true
		}
	}
	for _, b := range brokers {
		if leaders[b] < 1 || leaders[b] > 2 {
			t.Fatalf("unbalanced leaders %v", leaders)
		}
	}
}

func TestAssignReplicasErrors(t *testing.T) {
	for _, tt := range []struct {
		brokers    []int32
		partitions int
		rf         int
		want       error
	}{
		{[]int32{0}, 0, 1, ErrInvalidPartitions},
		{[]int32{0}, -1, 1, ErrInvalidPartitions},
		{[]int32{0}, 1, 0, ErrInvalidReplicationFactor},
		{[]int32{0}, 1, 2, ErrInvalidReplicationFactor},
		{nil, 1, 1, ErrInvalidReplicationFactor},
	} {
		if _, err := AssignReplicas(tt.brokers, tt.partitions, tt.rf, 0, 0); !errors.Is(err, tt.want) {
			t.Errorf("%v p=%d rf=%d: %v, want %v", tt.brokers, tt.partitions, tt.rf, err, tt.want)
		}
	}
}

func TestElectLeader(t *testing.T) {
	all := func(int32) bool { return true }
	not := func(id int32) func(int32) bool { return func(b int32) bool { return b != id } }
	p := &Partition{Replicas: []int32{2, 0, 1}, ISR: []int32{2, 0, 1}, Leader: 2}
	for _, tt := range []struct {
		name       string
		isr        []int32
		acceptable func(int32) bool
		unclean    bool
		want       int32
		wantUnc    bool
	}{
		{"keep the current leader", []int32{2, 0, 1}, all, false, 2, false},
		{"first in assignment order", []int32{0, 1}, not(2), false, 0, false},
		{"skips fenced", []int32{2, 0, 1}, func(b int32) bool { return b == 1 }, false, 1, false},
		{"none eligible", []int32{2}, not(2), false, -1, false},
		{"unclean", []int32{2}, not(2), true, 0, true},
	} {
		got, unc := ElectLeader(p, tt.isr, tt.acceptable, tt.unclean)
		if got != tt.want || unc != tt.wantUnc {
			t.Errorf("%s: got %d %v, want %d %v", tt.name, got, unc, tt.want, tt.wantUnc)
		}
	}
}

// TestAssignReplicasShiftFollowsPartitionIDs: Kafka grows the follower shift at every
// partition id that is a multiple of n, whatever the start index (here 2, shift 1, on
// three brokers: the shift grows at partition 3, not where (start + p) wraps).
func TestAssignReplicasShiftFollowsPartitionIDs(t *testing.T) {
	got, err := AssignReplicas([]int32{0, 1, 2}, 6, 3, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int32{{2, 1, 0}, {0, 2, 1}, {1, 0, 2}, {2, 0, 1}, {0, 1, 2}, {1, 2, 0}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}
