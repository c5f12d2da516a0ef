package cli

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseReassignmentJSON(t *testing.T) {
	f, err := parseReassignmentJSON([]byte(`{"version":1,"partitions":[{"topic":"a","partition":1,"replicas":[1,2],"log_dirs":["any","any"]},{"topic":"a","partition":0,"replicas":[3]}]}`))
	if err != nil || len(f.Partitions) != 2 || f.Partitions[0].Replicas[1] != 2 {
		t.Fatalf("%+v %v", f, err)
	}
	for _, tc := range []struct{ in, want string }{
		{`{`, "not valid JSON"},
		{`{"version":1,"partitions":[]}`, "names no partitions"},
		{`{"partitions":[{"topic":"","partition":0,"replicas":[1]}]}`, "has no topic"},
		{`{"partitions":[{"topic":"a","partition":-1,"replicas":[1]}]}`, "negative"},
		{`{"partitions":[{"topic":"a","partition":0,"replicas":[1]},{"topic":"a","partition":0,"replicas":[2]}]}`, "listed twice"},
		{`{"partitions":[{"topic":"a","partition":0,"replicas":[]}]}`, "has no replicas"},
		{`{"partitions":[{"topic":"a","partition":0,"replicas":[1],"log_dirs":["any","any"]}]}`, "2 log_dirs for 1 replicas"},
		{`{"partitions":[{"topic":"a","partition":0,"replicas":[1],"log_dirs":["/d"]}]}`, "not supported"},
	} {
		if _, err := parseReassignmentJSON([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestParseBrokerList(t *testing.T) {
	if ids, err := parseBrokerList("0, 1,2"); err != nil || len(ids) != 3 || ids[2] != 2 {
		t.Fatalf("%v %v", ids, err)
	}
	for _, bad := range []string{"", "a", "1,1", "-1"} {
		if _, err := parseBrokerList(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestReassign_Modes(t *testing.T) {
	b := startBroker(t, nil)
	bs := bootstrap(b)
	mustFail(t, "exactly one of", "", "reassign", bs)
	mustFail(t, "exactly one of", "", "reassign", bs, "--verify", "--cancel")
	mustFail(t, "--reassignment-json-file is required", "", "reassign", bs, "--execute")
	mustFail(t, "--topics-to-move-json-file is required", "", "reassign", bs, "--generate", "--broker-list", "0")
	if r := mustRun(t, "", "reassign", bs, "--list"); r.stdout != "No partition reassignments found.\n" {
		t.Fatalf("--list: %q", r.stdout)
	}
}

func FuzzParseReassignmentJSON(f *testing.F) {
	f.Add([]byte(`{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1,2,3],"log_dirs":["any","any","any"]}]}`))
	f.Add([]byte(`{"partitions":[{"topic":"a","partition":0,"replicas":[1]},{"topic":"a","partition":0,"replicas":[2]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parseReassignmentJSON(data)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, q := range p.Partitions {
			key := fmt.Sprintf("%s/%d", q.Topic, q.Partition)
			if q.Topic == "" || q.Partition < 0 || len(q.Replicas) == 0 || seen[key] {
				t.Fatalf("accepted %+v", q)
			}
			seen[key] = true
		}
	})
}

// The progress view shows, per adding replica, its bytes against the leader's, the
// percentage and the rate between two samples; a replica with no data yet is "not
// started", a broker that did not answer says why.
func TestReassignProgressLines(t *testing.T) {
	m := movingPartition{topic: "orders", partition: 0, leader: 0, adding: []int32{3, 4, 5}}
	at := time.Unix(1000, 0)
	first := sizeSample{at: at, sizes: map[replicaKey]int64{{0, "orders", 0}: 1 << 20, {3, "orders", 0}: 256 << 10}, failed: map[int32]error{}}
	second := sizeSample{at: at.Add(2 * time.Second), sizes: map[replicaKey]int64{{0, "orders", 0}: 1 << 20, {3, "orders", 0}: 768 << 10},
		failed: map[int32]error{5: errors.New("connection refused")}}
	var out bytes.Buffer
	printProgress(&out, m, first, &second)
	want := "  replica 3: 786432 of 1048576 bytes caught up (75.0%) from leader 0, 262144 B/s\n" +
		"  replica 4: not started\n" +
		"  replica 5: size unknown (connection refused)\n"
	if out.String() != want {
		t.Fatalf("progress view:\n%s\nwant:\n%s", out.String(), want)
	}
	out.Reset()
	printProgress(&out, m, first, nil)
	if got := strings.SplitN(out.String(), "\n", 2)[0]; got != "  replica 3: 262144 of 1048576 bytes caught up (25.0%) from leader 0" {
		t.Fatalf("one sample: %q", got)
	}
	out.Reset()
	gone := sizeSample{at: second.at, sizes: map[replicaKey]int64{{3, "orders", 0}: 1 << 20}}
	printProgress(&out, m, first, &gone) // the leader dropped its replica between the samples
	if got := strings.SplitN(out.String(), "\n", 2)[0]; got != "  replica 3: 262144 of 1048576 bytes caught up (25.0%) from leader 0" {
		t.Fatalf("leader gone in the second sample: %q", got)
	}
	out.Reset()
	printProgress(&out, movingPartition{topic: "orders", leader: 7, adding: []int32{3}}, first, nil)
	if out.String() != "  leader 7: size unknown (no answer)\n" {
		t.Fatalf("unknown leader: %q", out.String())
	}
}
