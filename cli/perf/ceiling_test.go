package perf

import (
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/segment"
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
	m := regexp.MustCompile(`produce-ceiling: 3 nodes, (\d+) fsyncs, (\d+) KiB per fsync on average, [\d.]+ CPU seconds in the nodes`).FindStringSubmatch(r.Stderr)
	if m == nil {
		t.Fatalf("produce-ceiling --replicas 3 stderr: %q", r.Stderr)
	}
	if fsyncs, _ := strconv.Atoi(m[1]); fsyncs < 3 {
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
