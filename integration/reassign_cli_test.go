package integration

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/cli"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kgo"
)

// progressLine is --verify's progress for the adding replica 3: bytes of the leader's,
// percentage, and the rate when both of its samples were taken (the leader may finish
// the move between them).
var progressLine = regexp.MustCompile(`(?m)^  replica 3: \d+ of \d+ bytes caught up \(\d+\.\d%\) from leader \d(, \d+ B/s)?$`)

// petrel runs the CLI and returns its exit code, stdout and stderr (one run at a time
// in the process: cli.RunWithIO serialises them).
func petrel(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := cli.RunWithIO(append([]string{"petrel"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestReassignCLI drives `petrel reassign` as kafka-reassign-partitions.sh is driven:
// --generate from a topics file, --execute of a reassignment file onto {1,2,3} (the
// replication throttled with --throttle to 256 KiB/s, set through
// IncrementalAlterConfigs as Kafka's tool does, so the move takes a few seconds), --verify
// with its progress view until it reports completion and clears the throttles, then
// --cancel of the finished move.
func TestReassignCLI(t *testing.T) {
	c := StartCluster(t, 4, WithVoters(3))
	createAssignedTopic(t, c, "cli-move", []int32{0, 1, 2}, nil)
	waitAssignedReplicas(t, c, "cli-move", 0, 1)
	cl := c.Client(t, kgo.DefaultProduceTopic("cli-move"))
	value := make([]byte, 64<<10)
	for i := range 16 { // 1 MiB, incompressible
		rand.Read(value)
		if err := cl.ProduceSync(testContext(t), &kgo.Record{Value: value}).FirstErr(); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	dir := t.TempDir()
	bs := "--bootstrap-server=" + strings.Join(c.Addrs(), ",")
	topics := filepath.Join(dir, "topics.json")
	os.WriteFile(topics, []byte(`{"version":1,"topics":[{"topic":"cli-move"}]}`), 0o644)
	code, out, stderr := petrel("reassign", bs, "--generate", "--topics-to-move-json-file", topics, "--broker-list", "1,2,3")
	want := "Current partition replica assignment\n" +
		`{"version":1,"partitions":[{"topic":"cli-move","partition":0,"replicas":[0,1,2],"log_dirs":["any","any","any"]}]}` + "\n\n" +
		"Proposed partition reassignment configuration\n" +
		`{"version":1,"partitions":[{"topic":"cli-move","partition":0,"replicas":[1,2,3],"log_dirs":["any","any","any"]}]}` + "\n"
	if code != 0 || out != want {
		t.Fatalf("--generate: exit %d, stderr %q\n got %q\nwant %q", code, stderr, out, want)
	}
	plan := filepath.Join(dir, "plan.json")
	os.WriteFile(plan, []byte(`{"version":1,"partitions":[{"topic":"cli-move","partition":0,"replicas":[1,2,3]}]}`), 0o644)
	code, out, stderr = petrel("reassign", bs, "--execute", "--reassignment-json-file", plan, "--throttle", fmt.Sprint(256<<10))
	if code != 0 || !strings.Contains(out, "Successfully started partition reassignment for cli-move-0\n") ||
		!strings.Contains(out, fmt.Sprintf("The inter-broker throttle limit was set to %d B/s", 256<<10)) {
		t.Fatalf("--execute: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	other := filepath.Join(dir, "other.json")
	os.WriteFile(other, []byte(`{"version":1,"partitions":[{"topic":"cli-move","partition":0,"replicas":[0,1,2]}]}`), 0o644)
	if code, _, stderr := petrel("reassign", bs, "--execute", "--reassignment-json-file", other); code == 0 || !strings.Contains(stderr, "use --additional") {
		t.Fatalf("--execute while another runs: exit %d, %q", code, stderr)
	}
	var views []string
	cleared := false
	testwait.For(t, 60*time.Second, func() error {
		code, out, stderr := petrel("reassign", bs, "--verify", "--reassignment-json-file", plan)
		if code != 0 {
			return fmt.Errorf("--verify: exit %d, stderr %q", code, stderr)
		}
		if len(views) == 0 || views[len(views)-1] != out {
			views = append(views, out)
		}
		if !strings.Contains(out, "Reassignment of partition cli-move-0 is completed.") {
			return fmt.Errorf("not completed: %q", out)
		}
		cleared = strings.Contains(out, "Clearing broker-level throttles on brokers") && strings.Contains(out, "Clearing topic-level throttles on topic cli-move")
		return nil
	})
	for _, v := range views {
		t.Logf("petrel reassign --verify:\n%s", v)
	}
	if !cleared {
		t.Fatalf("--verify did not clear the throttles when the move completed: %q", views[len(views)-1])
	}
	if len(views) < 2 || !strings.Contains(views[0], "is still in progress") || !progressLine.MatchString(views[0]) {
		t.Fatalf("no progress view before completion: %q", views)
	}
	code, out, _ = petrel("reassign", bs, "--cancel", "--reassignment-json-file", plan)
	if code != 0 || !strings.Contains(out, "None of the specified partition reassignments are active: cli-move-0") {
		t.Fatalf("--cancel after completion: exit %d, %q", code, out)
	}
	if code, _, stderr := petrel("reassign", bs, "--verify"); code == 0 || !strings.Contains(stderr, "--reassignment-json-file is required") {
		t.Fatalf("--verify without a file: exit %d, %q", code, stderr)
	}
}
