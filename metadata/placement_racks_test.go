package metadata

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

func TestRackAlternatedBrokers(t *testing.T) {
	racks := map[int32]string{0: "a", 1: "a", 2: "b", 3: "c", 4: "c"}
	got, n := RackAlternatedBrokers([]int32{4, 3, 2, 1, 0}, racks)
	if want := []int32{0, 2, 3, 1, 4}; !reflect.DeepEqual(got, want) || n != 3 {
		t.Fatalf("got %v %d, want %v 3", got, n, want)
	}
}

// TestAssignReplicasRackAwareKafkaExample checks Kafka's own example of the rule
// (AdminUtils' doc): racks a: 0,1,2 b: 3,4,5 c: 6,7,8 interlace to 0,3,6,1,4,7,2,5,8;
// with start index 0 and shift 0, partition 0 is 0,3,6 and partition 1 is 3,6,1.
func TestAssignReplicasRackAwareKafkaExample(t *testing.T) {
	racks := map[int32]string{0: "a", 1: "a", 2: "a", 3: "b", 4: "b", 5: "b", 6: "c", 7: "c", 8: "c"}
	got, err := AssignReplicasRackAware([]int32{0, 1, 2, 3, 4, 5, 6, 7, 8}, racks, 3, 3, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int32{{0, 3, 6}, {3, 6, 1}, {6, 1, 4}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestAssignReplicasRackAwareWithoutRacksIsRackUnaware(t *testing.T) {
	brokers := []int32{0, 1, 2, 3, 4}
	got, err := AssignReplicasRackAware(brokers, nil, 10, 3, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := AssignReplicas(brokers, 10, 3, 2, 3)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestAssignReplicasRackAwareErrors(t *testing.T) {
	racks := map[int32]string{0: "a", 1: "b"}
	if _, err := AssignReplicasRackAware([]int32{0, 1}, racks, 1, 3, 0, 0); err == nil {
		t.Fatal("RF 3 on 2 brokers placed")
	}
	if _, err := AssignReplicasRackAware([]int32{0, 1}, racks, 0, 1, 0, 0); err == nil {
		t.Fatal("0 partitions placed")
	}
	if _, err := AssignReplicasRackAware(nil, racks, 1, 1, 0, 0); err == nil {
		t.Fatal("placed on no broker")
	}
}

// TestAssignReplicasRackAwareProperties draws clusters (1-12 brokers over 1-5 racks,
// some without a rack), partition counts, replication factors and random draws, and
// checks every placement: RF distinct live brokers per partition; no rack holds two
// replicas of a partition while there are at least RF racks, and otherwise every rack
// holds one; leaders spread evenly over brokers (within one of each other per round of
// n partitions), and so over racks in proportion to their brokers.
func TestAssignReplicasRackAwareProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(392, 36))
	for trial := 0; trial < 2000; trial++ {
		n := 1 + rng.IntN(12)
		rackCount := 1 + rng.IntN(5)
		brokers := make([]int32, n)
		racks := map[int32]string{}
		for i := range brokers {
			brokers[i] = int32(10 + 3*i)
			if rng.IntN(10) > 0 {
				racks[brokers[i]] = fmt.Sprintf("r%d", rng.IntN(rackCount))
			}
		}
		partitions := 1 + rng.IntN(40)
		rf := 1 + rng.IntN(n)
		start, shift := rng.IntN(n), rng.IntN(n)
		got, err := AssignReplicasRackAware(brokers, racks, partitions, rf, start, shift)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		distinct := map[string]bool{}
		for _, b := range brokers {
			distinct[racks[b]] = true
		}
		leaders := map[int32]int{}
		for p, replicas := range got {
			if len(replicas) != rf {
				t.Fatalf("trial %d partition %d: %v is not RF %d", trial, p, replicas, rf)
			}
			seen, onRack := map[int32]bool{}, map[string]int{}
			for _, b := range replicas {
				if seen[b] {
					t.Fatalf("trial %d partition %d: %v repeats %d", trial, p, replicas, b)
				}
				seen[b] = true
				onRack[racks[b]]++
			}
			if want := min(rf, len(distinct)); len(onRack) != want {
				t.Fatalf("trial %d partition %d: %v spans %d racks, want %d (racks %v)", trial, p, replicas, len(onRack), want, racks)
			}
			leaders[replicas[0]]++
		}
		if partitions%n == 0 {
			for _, b := range brokers {
				if leaders[b] != partitions/n {
					t.Fatalf("trial %d: leaders %v not balanced over %d brokers", trial, leaders, n)
				}
			}
		}
		lo, hi := partitions, 0
		for _, b := range brokers {
			lo, hi = min(lo, leaders[b]), max(hi, leaders[b])
		}
		if hi-lo > 1 {
			t.Fatalf("trial %d: leaders %v differ by more than one", trial, leaders)
		}
	}
}
