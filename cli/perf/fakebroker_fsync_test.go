package perf

import (
	"errors"
	"os"
	"strings"
	"testing"

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
}

func TestSyncLogAnswersOnlyBehindAnEndedFsync(t *testing.T) {
	l, err := openSyncLog(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	topic := kmsg.NewProduceRequestTopic()
	part := kmsg.NewProduceRequestTopicPartition()
	part.Records = make([]byte, 4096)
	topic.Partitions = append(topic.Partitions, part, part)
	req.Topics = append(req.Topics, topic)
	pos := l.appendBatches(req)
	if pos != 8192 {
		t.Fatalf("appended to %d, want 8192", pos)
	}
	if err := l.waitSynced(pos); err != nil {
		t.Fatal(err)
	}
	if written, fsyncs := l.stats(); written != pos || fsyncs < 1 {
		t.Fatalf("after the wait: %d bytes, %d fsyncs", written, fsyncs)
	}
	l.close()
	if err := l.waitSynced(pos + 1); !errors.Is(err, errSyncLogClosed) {
		t.Fatalf("a wait after close: %v", err)
	}
}
