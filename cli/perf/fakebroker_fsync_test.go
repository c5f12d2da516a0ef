package perf

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestPerf_ProduceCeilingWithFsyncStoresEveryBatch(t *testing.T) {
	// The canned broker that fsyncs answers every record, after fsyncs that covered them
	// (fewer fsyncs than requests: a group commit), and leaves no file behind.
	dir := t.TempDir()
	r := mustRun(t, "", "perf", "produce-ceiling", "--records", "3000", "--record-size", "100", "--json", "--fsync-dir", dir)
	if sum := decodeSummary(t, r.Stdout); sum.Records != 3000 || sum.Errors != 0 || sum.Bytes != 3000*100 {
		t.Fatalf("produce-ceiling --fsync-dir: %+v", sum)
	}
	if !strings.Contains(r.Stderr, "fsyncs") || strings.Contains(r.Stderr, " 0 fsyncs") {
		t.Fatalf("produce-ceiling --fsync-dir stderr: %q", r.Stderr)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("files left in --fsync-dir: %v", left)
	}
	mustFail(t, "no such file", "", "perf", "produce-ceiling", "--records", "1", "--fsync-dir", dir+"/missing")
	mustFail(t, "bad --partitions 0", "", "perf", "produce-ceiling", "--records", "1", "--partitions", "0")

	// With --partitions 3 the records spread over three files, each fsynced, and none
	// is left either.
	r = mustRun(t, "", "perf", "produce-ceiling", "--records", "3000", "--record-size", "100", "--json", "--fsync-dir", dir, "--partitions", "3")
	if sum := decodeSummary(t, r.Stdout); sum.Records != 3000 || sum.Errors != 0 {
		t.Fatalf("produce-ceiling --fsync-dir --partitions 3: %+v", sum)
	}
	if !strings.Contains(r.Stderr, " fsyncs of 3 files,") {
		t.Fatalf("produce-ceiling --fsync-dir --partitions 3 stderr: %q", r.Stderr)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("files left in --fsync-dir: %v", left)
	}
}

func TestSyncStoreAnswersOnlyBehindEndedFsyncs(t *testing.T) {
	// Each partition's batches go to the file of that partition, and the answer waits
	// for an ended fsync of each file it wrote to.
	st, err := openSyncStore(t.TempDir(), 2)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	topic := kmsg.NewProduceRequestTopic()
	for i := range int32(2) {
		part := kmsg.NewProduceRequestTopicPartition()
		part.Partition, part.Records = i, make([]byte, 4096*(int(i)+1))
		topic.Partitions = append(topic.Partitions, part)
	}
	req.Topics = append(req.Topics, topic)
	waits, err := st.appendBatches(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(waits) != 2 || waits[0].log == waits[1].log || waits[0].pos != 4096 || waits[1].pos != 8192 {
		t.Fatalf("waits %+v, want 4096 in one file and 8192 in the other", waits)
	}
	if err := st.waitSynced(waits); err != nil {
		t.Fatal(err)
	}
	if written, fsyncs := st.stats(); written != 12288 || fsyncs < 2 {
		t.Fatalf("after the wait: %d bytes, %d fsyncs", written, fsyncs)
	}
	topic.Partitions[0].Partition = 2
	if _, err := st.appendBatches(req); err == nil || !strings.Contains(err.Error(), "partition 2 of 2") {
		t.Fatalf("a produce to a partition the topic lacks: %v", err)
	}
	st.close()
	if err := st.waitSynced([]syncWait{{log: waits[0].log, pos: 4097}}); !errors.Is(err, errSyncLogClosed) {
		t.Fatalf("a wait after close: %v", err)
	}
}

func TestCannedBrokerTakesProduceRequestsOfSeveralMiB(t *testing.T) {
	// A producer's request carries up to 1 MB for each partition: with three
	// partitions the canned broker must read frames of several MiB, and answer them.
	st, err := openSyncStore(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	fake, err := startCannedBroker(ceilingTopic, 3, 0, 1, 1<<20, st)
	if err != nil {
		st.close()
		t.Fatal(err)
	}
	defer fake.close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(fake.addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	topic := kmsg.NewProduceRequestTopic()
	topic.Topic = ceilingTopic
	for i := range int32(3) {
		part := kmsg.NewProduceRequestTopicPartition()
		part.Partition, part.Records = i, make([]byte, 1000<<10)
		topic.Partitions = append(topic.Partitions, part)
	}
	req.Topics = append(req.Topics, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("a produce request of 3 MB: %v", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 3 {
		t.Fatalf("answer %+v, want the three partitions", resp.Topics)
	}
	if written, _ := st.stats(); written != 3*1000<<10 {
		t.Fatalf("stored %d bytes, want %d", written, 3*1000<<10)
	}
}
