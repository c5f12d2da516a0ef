package broker

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The offset checkpoints across failed starts and crashes (docs/durability.md, "What a
// failure does"): a start that fails, or a crash before every replica is open, never
// writes checkpoints that forget a replica, so DeleteRecords is never undone.

// restartProps keeps a restart after a crash short: the next incarnation waits for the
// previous one's session to end before it is unfenced.
func restartProps() map[string]string {
	return map[string]string{"broker.session.timeout.ms": "2000", "broker.heartbeat.interval.ms": "200"}
}

// deleteRecordsBefore moves partition 0 of topic's log start offset to offset.
func deleteRecordsBefore(t *testing.T, b *Broker, topic string, offset int64) {
	t.Helper()
	var offsets kadm.Offsets
	offsets.Add(kadm.Offset{Topic: topic, Partition: 0, At: offset})
	resp, err := newAdmin(t, b).DeleteRecords(testContext(t), offsets)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := resp.Lookup(topic, 0); !ok || r.Err != nil || r.LowWatermark != offset {
		t.Fatalf("delete records before %d: %+v", offset, r)
	}
}

// checkLogStart checks that partition 0 of topic starts at logStart: ListOffsets
// (earliest) answers it, and a consumer reading from the start gets logStart first.
func checkLogStart(t *testing.T, b *Broker, topic string, logStart int64) {
	t.Helper()
	listed, err := newAdmin(t, b).ListStartOffsets(testContext(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	if lo, ok := listed.Lookup(topic, 0); !ok || lo.Err != nil || lo.Offset != logStart {
		t.Fatalf("log start offset %+v, want %d: deleted records came back", lo, logStart)
	}
	ctx := testContext(t)
	cl := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}))
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("no record read: %v", err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatal(err) })
		if recs := fs.Records(); len(recs) > 0 {
			if recs[0].Offset != logStart {
				t.Fatalf("the first record served is at offset %d, want %d", recs[0].Offset, logStart)
			}
			return
		}
	}
}

// TestFailedStartKeepsDeleteRecords: a start that fails once its partition manager has
// read the checkpoints (here: the metrics port is taken) writes no checkpoint and no
// clean-shutdown marker, so the next start still serves the topic from the offset
// DeleteRecords moved it to.
func TestFailedStartKeepsDeleteRecords(t *testing.T) {
	const topic = "failed-start"
	dir := t.TempDir()
	props := restartProps()
	b := startTestBroker(t, dir, props)
	mustCreateTopic(t, newAdmin(t, b), topic, 1, nil)
	produceN(t, b, topic, 200)
	deleteRecordsBefore(t, b, topic, 150)
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(dir, "logs")
	before := checkpointFiles(t, logs)

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	failed, err := Start(Config{NodeID: 0, DataDir: dir, Listen: "127.0.0.1:0", RaftListen: "127.0.0.1:0",
		MetricsListen: taken.Addr().String(), Properties: props,
		Logger: hclog.New(&hclog.LoggerOptions{Output: newTestLogWriter(t, "node-0' "), Level: hclog.Info})})
	if err == nil {
		failed.Shutdown(context.Background())
		t.Fatal("a start with the metrics port taken succeeded")
	}
	if after := checkpointFiles(t, logs); !sameFiles(before, after) {
		t.Errorf("a failed start rewrote the log directory's small files:\nbefore %v\nafter  %v", before, after)
	}

	b = startTestBroker(t, dir, props)
	checkLogStart(t, b, topic, 150)
}

// TestCrashInUncleanRestartWindowKeepsDeleteRecords: after a crash, the next start
// writes its periodic checkpoints before its reconciler has opened the replicas; they
// carry the previous offsets of the replicas not yet open, so a second crash in that
// window loses neither the log start offsets nor the recovery points.
func TestCrashInUncleanRestartWindowKeepsDeleteRecords(t *testing.T) {
	const topic = "unclean-window"
	dir := t.TempDir()
	props := restartProps()
	props["replica.high.watermark.checkpoint.interval.ms"] = "100"
	b := startTestBroker(t, dir, props)
	mustCreateTopic(t, newAdmin(t, b), topic, 1, nil)
	produceN(t, b, topic, 200)
	deleteRecordsBefore(t, b, topic, 150)
	logs := filepath.Join(dir, "logs")
	startsPath := filepath.Join(logs, segment.LogStartOffsetCheckpointFile)
	tp := segment.TopicPartition{Topic: topic, Partition: 0}
	testwait.For(t, 10*time.Second, func() error { // the log start offset checkpointed
		starts, err := segment.ReadOffsetCheckpoint(startsPath)
		if err != nil || starts[tp] != 150 {
			return errors.New("not yet")
		}
		return nil
	})
	b.Kill()

	// The unclean restart: its reconciler is held before it opens anything, while the
	// maintenance loop writes the checkpoints.
	before := checkpointFiles(t, logs)
	b2, err := Start(Config{NodeID: 0, DataDir: dir, Listen: "127.0.0.1:0", RaftListen: "127.0.0.1:0", Properties: props,
		Logger: hclog.New(&hclog.LoggerOptions{Output: newTestLogWriter(t, "node-0' "), Level: hclog.Info})})
	if err != nil {
		t.Fatal(err)
	}
	hold := func() { <-b2.stop }
	b2.stalls.reconcile.Store(&hold)
	testwait.For(t, 10*time.Second, func() error { // a periodic checkpoint of the restart
		after := checkpointFiles(t, logs)
		for _, name := range offsetCheckpointNames {
			if os.SameFile(before[name], after[name]) {
				return errors.New(name + " not rewritten yet")
			}
		}
		return nil
	})
	if n := len(b2.partitions.all()); n != 0 {
		t.Fatalf("%d replicas open in the window", n)
	}
	b2.Kill()

	b = startTestBroker(t, dir, props)
	checkLogStart(t, b, topic, 150)
}

// offsetCheckpointNames are the log directory's offset checkpoints.
var offsetCheckpointNames = []string{segment.ReplicationOffsetCheckpointFile, segment.RecoveryPointOffsetCheckpointFile, segment.LogStartOffsetCheckpointFile}

// checkpointFiles stats the log directory's checkpoints and clean-shutdown marker (nil:
// absent).
func checkpointFiles(t *testing.T, logs string) map[string]os.FileInfo {
	t.Helper()
	out := map[string]os.FileInfo{}
	for _, name := range append(offsetCheckpointNames, cleanShutdownFile, topicIDCheckpointFile) {
		st, err := os.Stat(filepath.Join(logs, name))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		out[name] = st
	}
	return out
}

// sameFiles reports whether a and b (checkpointFiles) name the same files, none
// rewritten.
func sameFiles(a, b map[string]os.FileInfo) bool {
	for name, st := range a {
		other := b[name]
		if (st == nil) != (other == nil) || st != nil && (!os.SameFile(st, other) || !st.ModTime().Equal(other.ModTime())) {
			return false
		}
	}
	return true
}
