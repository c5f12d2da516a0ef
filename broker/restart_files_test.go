package broker

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kgo"
)

// fileState is what a write, a creation, a rename or a removal changes in a file.
type fileState struct {
	size         int64
	mtime, ctime int64 // nanoseconds
}

// replicaFiles returns the state of every file and partition directory of topic in the
// logs directory of dataDir.
func replicaFiles(t *testing.T, dataDir, topic string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	logs := filepath.Join(dataDir, "logs")
	err := filepath.Walk(logs, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(logs, path)
		if !strings.HasPrefix(rel, topic+"-") {
			return nil
		}
		st := info.Sys().(*syscall.Stat_t)
		out[rel] = fileState{info.Size(), info.ModTime().UnixNano(), st.Ctim.Nano()}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// produceN writes n records to partition 0 of topic.
func produceN(t *testing.T, b *Broker, topic string, n int) {
	t.Helper()
	cl := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := 0; i < n; i++ {
		if err := cl.ProduceSync(testContext(t), &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
}

// consumeN reads n records from partition 0 of topic and checks their offsets and
// values.
func consumeN(t *testing.T, b *Broker, topic string, n int) {
	t.Helper()
	ctx := testContext(t)
	cl := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	for got := 0; got < n; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records: %v", got, n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatal(err) })
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) != fmt.Sprint(got) || r.Offset != int64(got) {
				t.Fatalf("record %d: offset %d value %q", got, r.Offset, r.Value)
			}
			got++
		})
	}
}

// TestCleanRestartWritesNoReplicaFile: a restart after a clean shutdown creates, writes,
// renames and removes no file of any replica (empty ones and one with records), Kafka's
// clean start; the records read back. After a crash, a start that is stopped cleanly
// before it has opened the replicas does not mark the log directory clean, so the start
// after it still recovers: the torn tail written before the crash is cut.
func TestCleanRestartWritesNoReplicaFile(t *testing.T) {
	const topic, records = "files", 5
	dir := t.TempDir()
	// The start after the one stopped early waits for that incarnation's session to end
	// (Kafka's DUPLICATE_BROKER_REGISTRATION rule): a short session keeps the test short.
	props := map[string]string{"broker.session.timeout.ms": "2000", "broker.heartbeat.interval.ms": "200"}
	b := startTestBroker(t, dir, props)
	mustCreateTopic(t, newAdmin(t, b), topic, 4, nil)
	produceN(t, b, topic, records)
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := replicaFiles(t, dir, topic)

	b = startTestBroker(t, dir, props)
	if n := len(b.partitions.all()); n != 4 {
		t.Fatalf("%d of 4 replicas open at ready", n)
	}
	if after := replicaFiles(t, dir, topic); !maps.Equal(before, after) {
		for name, st := range after {
			if before[name] != st {
				t.Errorf("%s changed by a clean restart: %+v, before %+v", name, st, before[name])
			}
		}
		for name := range before {
			if _, ok := after[name]; !ok {
				t.Errorf("%s removed by a clean restart", name)
			}
		}
		t.FailNow()
	}
	consumeN(t, b, topic, records)

	// A crash, then a torn batch at the end of partition 0's log.
	b.Kill()
	logPath := filepath.Join(dir, "logs", segment.PartitionDirName(topic, 0), fmt.Sprintf("%020d.log", 0))
	st, err := os.Stat(logPath)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("torn batch: not a record batch header")); err != nil {
		t.Fatal(err)
	}
	f.Close()

	// The next start is stopped before its first reconciliation opens the replicas.
	b2, err := Start(Config{NodeID: 0, DataDir: dir, Listen: "127.0.0.1:0", RaftListen: "127.0.0.1:0", Properties: props,
		Logger: hclog.New(&hclog.LoggerOptions{Output: newTestLogWriter(t, "node-0 "), Level: hclog.Info})})
	if err != nil {
		t.Fatal(err)
	}
	hold := func() { <-b2.stop }
	b2.stalls.reconcile.Store(&hold) // set before Raft elects this node: unfencing takes longer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for !b2.IsController() { // Raft is up; the reconciler waits in the hook
		if ctx.Err() != nil {
			t.Fatal("the restarted node did not become the controller")
		}
		time.Sleep(20 * time.Millisecond) // polling a state with a deadline
	}
	if err := b2.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "logs", cleanShutdownFile)); err == nil {
		t.Fatal("a start after a crash that opened no replica wrote the clean shutdown marker")
	}

	b = startTestBroker(t, dir, props)
	if got, err := os.Stat(logPath); err != nil || got.Size() != st.Size() {
		t.Fatalf("after the crash recovery, partition 0's log holds %v bytes (%v), want the %d before the torn batch", got.Size(), err, st.Size())
	}
	consumeN(t, b, topic, records)
}
