package integration

// Clients in other languages (kafkajs, confluent-kafka-python) driven through the
// scripts in testdata/: each script has the same three modes (produce, consume, member,
// described at the top of each script), prints records as "partition offset value"
// lines, and exits on its own after PETREL_SCRIPT_TIMEOUT_MS. The tests here run the
// same three checks with every such client: idempotent produce read back exactly once
// in order, group commit and resume, and two members splitting a topic.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kgo"
)

// scriptTimeout bounds one script run (the script's own timer is a little shorter).
const scriptTimeout = 60 * time.Second

// scriptClient is a client library reached through a script: argv runs it, without
// the mode and its arguments.
type scriptClient struct {
	name string
	argv []string
}

// missingTool skips t with why, or fails it when CI is set: CI must install the tool.
func missingTool(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "" {
		t.Skip(why)
	}
	t.Fatalf("%s, and CI is set: .ci/run must install it", why)
}

// command is the client's command for mode and args, bounded by ctx and by the
// script's own time bound. The client's group timeouts are its defaults.
func (s scriptClient) command(ctx context.Context, mode string, args ...string) *exec.Cmd {
	argv := append(append(slices.Clone(s.argv), mode), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(),
		"PETREL_SCRIPT_TIMEOUT_MS="+strconv.Itoa(int((scriptTimeout-5*time.Second).Milliseconds())),
		// The scripts choose every partition themselves.
		"KAFKAJS_NO_PARTITIONER_WARNING=1",
	)
	return cmd
}

// run runs mode to its end and returns its stdout; a failure or a timeout fails t
// with stderr.
func (s scriptClient) run(t *testing.T, mode string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(testContext(t), scriptTimeout)
	defer cancel()
	cmd := s.command(ctx, mode, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s %s: %v after %s (context: %v)\nstderr:\n%s", s.name, mode, strings.Join(args, " "), err,
			time.Since(start).Round(time.Millisecond), ctx.Err(), stderr.String())
	}
	if stderr.Len() > 0 {
		t.Logf("%s %s stderr:\n%s", s.name, mode, stderr.String())
	}
	t.Logf("%s %s took %s", s.name, mode, time.Since(start).Round(time.Millisecond))
	return stdout.String()
}

// parseRecordLines parses the "partition offset value" lines of a script's output.
func parseRecordLines(t *testing.T, out string) []consumed {
	t.Helper()
	var recs []consumed
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		r, ok := parseKcatGroupLine(line)
		if !ok {
			t.Fatalf("unexpected output line %q", line)
		}
		recs = append(recs, r)
	}
	return recs
}

// member is a startMember running the script's member mode: leave is SIGTERM (the
// script closes its consumer, leaving the group), kill is SIGKILL.
func (s scriptClient) member() startMember {
	return func(t testing.TB, c *Cluster, group, topic, clientID string) *groupMember {
		t.Helper()
		// Not CommandContext: the member outlives this call; stop ends it.
		cmd := s.command(context.Background(), "member", strings.Join(c.Addrs(), ","), topic, group, clientID)
		// A member runs for a whole scenario, longer than one script run, with the
		// group tests' short session timeout, so that a killed member expires soon.
		cmd.Env = append(cmd.Env,
			"PETREL_SCRIPT_TIMEOUT_MS="+strconv.Itoa(int((2*testTimeout).Milliseconds())),
			"PETREL_SESSION_TIMEOUT_MS="+strconv.Itoa(int(groupSessionTimeout.Milliseconds())),
			"PETREL_HEARTBEAT_INTERVAL_MS="+strconv.Itoa(int(groupHeartbeat.Milliseconds())),
		)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr testwait.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		m := &groupMember{clientID: clientID}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if r, ok := parseKcatGroupLine(sc.Text()); ok {
					m.add(r.partition, r.offset, r.value)
				}
			}
		}()
		stop := func(sig os.Signal) {
			cmd.Process.Signal(sig)
			done := make(chan struct{})
			go func() {
				wg.Wait()
				cmd.Wait()
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(scriptTimeout):
				cmd.Process.Kill()
				<-done
				t.Errorf("%s member %s did not stop within %s after %v", s.name, clientID, scriptTimeout, sig)
			}
			if out := stderr.String(); out != "" {
				t.Logf("%s member %s stderr:\n%s", s.name, clientID, out)
			}
		}
		m.setStop(t, func() { stop(syscall.SIGTERM) }, func() { stop(os.Kill) })
		return m
	}
}

// scriptIdempotentRecords is how many records the idempotent-producer check sends,
// over scriptPartitions partitions.
const (
	scriptIdempotentRecords = 10000
	scriptPartitions        = 3
)

// testScriptIdempotentProduce has the client's idempotent producer send
// scriptIdempotentRecords records, record i to partition i % 3, and reads them back
// with kgo: every record exactly once, in order in each partition, written with a
// producer id, and nothing else in the log.
func testScriptIdempotentProduce(t *testing.T, s scriptClient) {
	c := StartCluster(t, 1)
	topic := s.name + "-idempotent"
	c.CreateTopic(t, topic, scriptPartitions, nil)
	prefix := s.name
	out := s.run(t, "produce", c.Addr(0), topic, strconv.Itoa(scriptPartitions), strconv.Itoa(scriptIdempotentRecords), prefix)
	if want := fmt.Sprintf("produced %d", scriptIdempotentRecords); strings.TrimSpace(out) != want {
		t.Fatalf("%s produce printed %q, expected %q", s.name, out, want)
	}

	cons := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := testContext(t)
	next := make([]int, scriptPartitions) // per partition: index of the next expected record
	for p := range next {
		next[p] = p
	}
	producers := map[int64]bool{}
	for got := 0; got < scriptIdempotentRecords; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("after %d records: %v", got, err)
		}
		var bad error
		fs.EachRecord(func(r *kgo.Record) {
			if bad != nil {
				return
			}
			p := r.Partition
			want := fmt.Sprintf("%s-%05d", prefix, next[p])
			switch {
			case next[p] >= scriptIdempotentRecords:
				bad = fmt.Errorf("partition %d: more records than sent: %q at offset %d", p, r.Value, r.Offset)
			case string(r.Value) != want:
				bad = fmt.Errorf("partition %d offset %d is %q, expected %q (a record lost, duplicated or reordered)", p, r.Offset, r.Value, want)
			case r.ProducerID < 0:
				bad = fmt.Errorf("partition %d offset %d was not written idempotently (producer id %d)", p, r.Offset, r.ProducerID)
			}
			producers[r.ProducerID] = true
			next[p] += scriptPartitions
			got++
		})
		if bad != nil {
			t.Fatal(bad)
		}
	}
	if len(producers) != 1 {
		t.Errorf("records written by producer ids %v, expected one producer", producers)
	}
	// Nothing beyond: each partition's log ends at its share of the records.
	for p := range int32(scriptPartitions) {
		want := int64((scriptIdempotentRecords - int(p) + scriptPartitions - 1) / scriptPartitions)
		if leo := mustReplicaLEO(t, c, 0, topic, p); leo != want {
			t.Errorf("partition %d: log end offset %d, %d records sent to it", p, leo, want)
		}
	}
}

// testScriptCommitAndResume, with the client's default group settings (but for
// auto-commit, off), has a group member of the client consume 700 of 1,000
// records spread over 2 partitions, commit and leave; the committed offsets are those
// after the last record it printed of each partition, and a second run of the same
// group reads exactly the other 300: every record once between the two runs.
func testScriptCommitAndResume(t *testing.T, s scriptClient) {
	c := StartCluster(t, 1, groupOptions()...)
	topic, group := s.name+"-resume", s.name+"-resume-group"
	const partitions, perPartition, first = 2, 500, 700
	c.CreateTopic(t, topic, partitions, nil)
	all := producePhase(t, c, topic, "resume", partitions, perPartition)
	addr := strings.Join(c.Addrs(), ",")

	run1 := parseRecordLines(t, s.run(t, "consume", addr, topic, group, strconv.Itoa(first)))
	if len(run1) != first {
		t.Fatalf("first run printed %d records, expected %d", len(run1), first)
	}
	wantCommitted := map[int32]int64{}
	for _, r := range run1 {
		wantCommitted[r.partition] = max(wantCommitted[r.partition], r.offset+1)
	}
	committed := committedOffsetsOf(t, c, group, topic)
	if !mapsEqual(committed, wantCommitted) {
		t.Fatalf("committed offsets %v, expected %v (after the last record of each partition the first run printed)", committed, wantCommitted)
	}

	run2 := parseRecordLines(t, s.run(t, "consume", addr, topic, group, strconv.Itoa(len(all)-first)))
	for _, r := range run2 {
		if r.offset < committed[r.partition] {
			t.Fatalf("second run read partition %d offset %d, below the committed offset %d", r.partition, r.offset, committed[r.partition])
		}
	}
	seen := map[string]int{}
	for _, r := range append(run1, run2...) {
		seen[fmt.Sprintf("%d/%d", r.partition, r.offset)]++
		if want := fmt.Sprintf("resume/%d/%d", r.partition, r.offset); r.value != want {
			t.Fatalf("partition %d offset %d is %q, expected %q", r.partition, r.offset, r.value, want)
		}
	}
	for key, n := range seen {
		if n != 1 {
			t.Fatalf("record %s read %d times over the two runs", key, n)
		}
	}
	if len(seen) != len(all) {
		t.Fatalf("the two runs read %d distinct records, %d exist", len(seen), len(all))
	}
	if got, want := committedOffsetsOf(t, c, group, topic), map[int32]int64{0: perPartition, 1: perPartition}; !mapsEqual(got, want) {
		t.Fatalf("committed offsets after the second run %v, expected %v", got, want)
	}
}

// committedOffsetsOf is group's committed offset of each partition of topic that has
// one.
func committedOffsetsOf(t *testing.T, c *Cluster, group, topic string) map[int32]int64 {
	t.Helper()
	offsets, err := c.Admin(t).FetchOffsets(testContext(t), group)
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	out := map[int32]int64{}
	for p, o := range offsets[topic] {
		if o.Err != nil {
			t.Fatalf("fetch offsets of %s: %s-%d: %v", group, topic, p, o.Err)
		}
		out[p] = o.At
	}
	return out
}

func mapsEqual(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
