package cli

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// --generate proposes a rack-aware plan when every listed broker has a rack, the
// rack-unaware one when none has, and refuses a mix with Kafka's message.
func TestProposeReplicasByRack(t *testing.T) {
	racks := map[int32]string{0: "a", 1: "a", 2: "b", 3: "b"}
	got, err := proposeReplicas([]int32{0, 1, 2, 3}, racks, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range got {
		if racks[r[0]] == racks[r[1]] {
			t.Fatalf("%v: both replicas of a partition on rack %s", got, racks[r[0]])
		}
	}
	plain, err := proposeReplicas([]int32{0, 1, 2, 3}, nil, 4, 2)
	if want := [][]int32{{0, 1}, {1, 2}, {2, 3}, {3, 0}}; err != nil || !reflect.DeepEqual(plain, want) {
		t.Fatalf("without racks: %v %v, want %v", plain, err, want)
	}
	if _, err := proposeReplicas([]int32{0, 1, 4}, racks, 1, 2); !errors.Is(err, errPartialRacks) {
		t.Fatalf("some brokers without a rack: %v", err)
	}
}

// End to end on a broker with broker.rack: --generate reads the racks from the cluster
// (a rack-aware plan over one rack is the plain one), and --disable-rack-aware is
// accepted.
func TestReassignGenerateReadsRacks(t *testing.T) {
	b := startBroker(t, map[string]string{"broker.rack": "a"})
	bs := bootstrap(b)
	mustRun(t, "", "topics", bs, "--create", "--topic", "moving", "--partitions", "2")
	file := filepath.Join(t.TempDir(), "topics.json")
	if err := os.WriteFile(file, []byte(`{"version":1,"topics":[{"topic":"moving"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, extra := range [][]string{nil, {"--disable-rack-aware"}} {
		args := append([]string{"reassign", bs, "--generate", "--broker-list", "0", "--topics-to-move-json-file", file}, extra...)
		r := mustRun(t, "", args...)
		if !strings.Contains(r.stdout, `"topic":"moving","partition":1,"replicas":[0]`) {
			t.Fatalf("%v: %s", extra, r.stdout)
		}
	}
	mustFail(t, "not all brokers have rack information", "", "reassign", bs, "--generate", "--broker-list", "0,7", "--topics-to-move-json-file", file)
}
