package perf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestPerf_ProduceCeilingReplicatedStoresEveryBatchOnEveryNode(t *testing.T) {
	// Three canned brokers, a process each: every record is acknowledged, each node
	// wrote every byte once (the leader's copy and two followers' copies), and no file is
	// left behind.
	dir := t.TempDir()
	r := mustRun(t, "", "perf", "produce-ceiling", "--records", "3000", "--record-size", "100", "--json",
		"--fsync-dir", dir, "--partitions", "4", "--replicas", "3")
	sum := decodeSummary(t, r.Stdout)
	if sum.Records != 3000 || sum.Errors != 0 {
		t.Fatalf("produce-ceiling --replicas 3: %+v", sum)
	}
	m := regexp.MustCompile(`produce-ceiling: 3 nodes, (\d+) bytes written, (\d+) fsyncs, (\d+) KiB per fsync on average, [\d.]+ CPU seconds in the nodes`).FindStringSubmatch(r.Stderr)
	if m == nil {
		t.Fatalf("produce-ceiling --replicas 3 stderr: %q", r.Stderr)
	}
	// The three copies are the same bytes: the batches, each at least its records' values.
	if written, _ := strconv.Atoi(m[1]); written%3 != 0 || written/3 < 3000*100 {
		t.Fatalf("%d bytes written over three nodes, want three copies of at least %d", written, 3000*100)
	}
	if fsyncs, _ := strconv.Atoi(m[2]); fsyncs < 3 {
		t.Fatalf("%d fsyncs over three nodes", fsyncs)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("files left in --fsync-dir: %v", left)
	}
	mustFail(t, "bad --replicas 3", "", "perf", "produce-ceiling", "--records", "1", "--replicas", "3")
	mustFail(t, "bad --replicas 0", "", "perf", "produce-ceiling", "--records", "1", "--replicas", "0", "--fsync-dir", dir)
}

func TestReplicatedStoreAnswersOnlyOnceEveryFollowerAcknowledged(t *testing.T) {
	// Node 1 of 3 leads partition 1 of 3 and no other. A produce waits for its own fsync
	// and for both followers' fetches past the bytes; an acknowledgement beyond what was
	// written, or going back, is refused.
	st, err := openReplicatedStore(t.TempDir(), 3, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	if st.files() != 1 || st.logs[0] != nil || st.logs[1] == nil || st.logs[2] != nil {
		t.Fatalf("node 1 of 3 holds %d files: %v", st.files(), st.logs)
	}
	batch := cannedBatch(5, 100)
	req := kmsg.NewPtrProduceRequest()
	topic := kmsg.NewProduceRequestTopic()
	part := kmsg.NewProduceRequestTopicPartition()
	part.Partition, part.Records = 1, batch
	topic.Partitions = append(topic.Partitions, part)
	req.Topics = append(req.Topics, topic)
	appended := st.appendedSince()
	waits, err := st.appendBatches(req)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-appended:
	default:
		t.Fatal("an append did not wake the followers' fetches")
	}
	l, pos := waits[0].log, int64(len(batch))
	deadline := time.Now().Add(10 * time.Second)
	for _, fsyncs := l.stats(); fsyncs == 0; _, fsyncs = l.stats() {
		if time.Now().After(deadline) {
			t.Fatal("no fsync in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
	committed := func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.committedLocked(pos)
	}
	if committed() {
		t.Fatal("committed with no follower's acknowledgement")
	}
	if err := l.ack(followerSlot(0, 1), pos); err != nil {
		t.Fatal(err)
	}
	if committed() {
		t.Fatal("committed with one follower's acknowledgement of two")
	}
	if err := l.ack(followerSlot(2, 1), pos+1); err == nil {
		t.Fatal("an acknowledgement beyond the end was taken")
	}
	if err := l.ack(followerSlot(2, 1), pos); err != nil {
		t.Fatal(err)
	}
	if err := st.waitSynced(waits); err != nil {
		t.Fatal(err)
	}
	if err := l.ack(followerSlot(2, 1), 0); err == nil {
		t.Fatal("an acknowledgement going back was taken")
	}

	sent := &req.Topics[0].Partitions[0]
	sent.Partition = 0
	if _, err := st.appendBatches(req); err == nil || !strings.Contains(err.Error(), "not led here") {
		t.Fatalf("a produce to a partition another node leads: %v", err)
	}
	sent.Partition, sent.Records = 1, append(append([]byte(nil), batch[:len(batch)-1]...), batch[len(batch)-1]^1)
	if _, err := st.appendBatches(req); !errors.Is(err, segment.ErrCorruptBatch) {
		t.Fatalf("a produce of a damaged batch: %v", err)
	}
}

func TestCheckBatchesTakesWholeBatchesOnly(t *testing.T) {
	batch := cannedBatch(3, 10)
	two := append(append([]byte(nil), batch...), batch...)
	if err := checkBatches(two); err != nil {
		t.Fatalf("two whole batches: %v", err)
	}
	if err := checkBatches(nil); err != nil {
		t.Fatalf("no batch: %v", err)
	}
	for name, b := range map[string][]byte{
		"cut":     two[:len(two)-1],
		"damaged": append(append([]byte(nil), batch[:30]...), append([]byte{batch[30] ^ 1}, batch[31:]...)...),
		"short":   batch[:20],
	} {
		if err := checkBatches(b); err == nil {
			t.Errorf("%s: taken", name)
		}
	}
}

func TestFollowerSlotsSkipTheLeader(t *testing.T) {
	for _, c := range []struct{ id, self, want int32 }{{0, 1, 0}, {2, 1, 1}, {1, 0, 0}, {2, 0, 1}, {0, 2, 0}, {1, 2, 1}} {
		if got := followerSlot(c.id, c.self); got != int(c.want) {
			t.Errorf("followerSlot(%d, %d) = %d, want %d", c.id, c.self, got, c.want)
		}
	}
}

func TestFetchableAnswersWholeAppendsWithinTheLimit(t *testing.T) {
	// Appends end at 100, 300, 600 and 1600: an answer carries whole appends that fit,
	// and the first one whole even when it does not, if it is the answer's first.
	l := &syncLog{acked: make([]int64, 2), ends: []int64{100, 300, 600, 1600}}
	for _, c := range []struct {
		pos, limit int64
		atLeastOne bool
		want       int64
	}{
		{0, 1000, true, 600}, {0, 50, true, 100}, {0, 50, false, 0}, {0, 300, false, 300},
		{100, 200, true, 200}, {600, 10, true, 1000}, {600, 10, false, 0}, {1600, 1 << 20, true, 0},
	} {
		if got := l.fetchable(c.pos, c.limit, c.atLeastOne); got != c.want {
			t.Errorf("fetchable(%d, %d, %v) = %d, want %d", c.pos, c.limit, c.atLeastOne, got, c.want)
		}
	}
}

func TestCannedBrokerClosesWithAnAnswerWaitingForItsFollowers(t *testing.T) {
	// A Produce to node 0 of 3 waits for followers that never fetch: closing the broker
	// still ends, and the producer's request fails rather than hangs.
	st, err := openReplicatedStore(t.TempDir(), 1, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	fake, err := startCannedBroker(ceilingTopic, 1, 0, 1, 1<<20, st)
	if err != nil {
		st.close()
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(fake.addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := cannedProduceRequest(cannedBatch(2, 10))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	answered := make(chan error, 1)
	go func() {
		_, err := req.RequestWith(ctx, cl)
		answered <- err
	}()
	for written, _ := st.stats(); written == 0; written, _ = st.stats() {
		if ctx.Err() != nil {
			t.Fatal("the produce was not stored in 30 s")
		}
		time.Sleep(time.Millisecond)
	}
	closed := make(chan struct{})
	go func() {
		fake.close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("the broker did not close in 20 s with an answer waiting")
	}
	select {
	case err := <-answered:
		if err == nil {
			t.Fatal("a produce nobody replicated was answered")
		}
	case <-ctx.Done():
		t.Fatal("the producer's request did not end")
	}
}

func TestPerf_ProduceCeilingEndsWhenANodeDies(t *testing.T) {
	// A node killed in the middle of a run ends the run with an error, at once rather
	// than at the producer's timeouts (or never, for a record in flight one at a time):
	// a canned cluster with the default producer and with one record in flight, and the
	// floor's nodes.
	if runtime.GOOS != "linux" {
		t.Skip("finds the node processes in /proc")
	}
	for _, tc := range []struct {
		name, victim string
		args         []string
	}{
		{"canned cluster", "ceiling-node\x00--node-id\x001\x00", []string{"--partitions", "3", "--replicas", "3"}},
		{"canned cluster, one record in flight", "ceiling-node\x00--node-id\x001\x00", []string{"--partitions", "3", "--replicas", "3", "--max-buffered-records", "1"}},
		{"floor", "floor-node\x00--leader\x00", []string{"--floor", "--replicas", "3", "--max-buffered-records", "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			type result struct {
				code           int
				stdout, stderr string
			}
			done := make(chan result, 1)
			go func() {
				var out, errOut strings.Builder
				args := append([]string{"petrel", "perf", "produce-ceiling", "--duration", "60s", "--record-size", "1000", "--fsync-dir", dir}, tc.args...)
				code := runPetrel(args, strings.NewReader(""), &out, &errOut) // the command locks its error stream
				done <- result{code, out.String(), errOut.String()}
			}()
			deadline := time.Now().Add(30 * time.Second)
			var victim int
			for victim == 0 || !filesHaveData(dir) {
				if time.Now().After(deadline) {
					t.Fatal("no nodes writing after 30 s")
				}
				if victim == 0 {
					victim = childPID(t, tc.victim)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if p, err := os.FindProcess(victim); err == nil {
				_ = p.Kill()
			}
			select {
			case r := <-done:
				if r.code != 1 || !strings.Contains(r.stderr, "ended during the run") {
					t.Fatalf("a run with a node killed: exit %d, stderr %q", r.code, r.stderr)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the run did not end 30 s after a node died")
			}
		})
	}
}

// childPID returns the pid of this process's child whose command line holds want
// (NUL-separated arguments), or 0 when there is none yet.
func childPID(t *testing.T, want string) int {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); bytes.Contains(cmdline, []byte(want)) {
			return pid
		}
	}
	return 0
}

// filesHaveData reports whether a file in dir, or in a directory in it, holds bytes.
func filesHaveData(dir string) bool {
	found := false
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil && info.Size() > 0 {
				found = true
			}
		}
		return nil
	})
	return found
}
