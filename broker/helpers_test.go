package broker

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testLogWriter sends a node's log lines to t.Log with a prefix.
type testLogWriter struct {
	t      testing.TB
	prefix string
}

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(w.prefix + strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// startTestBroker starts a one-node broker in dir (a new temp dir when empty) on
// 127.0.0.1:0 ports and waits until it is ready.
func startTestBroker(t testing.TB, dir string, props map[string]string) *Broker {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	var out io.Writer = testLogWriter{t, "node-0 "}
	b, err := Start(Config{
		NodeID: 0, DataDir: dir, Listen: "127.0.0.1:0", RaftListen: "127.0.0.1:0", Properties: props,
		Logger: hclog.New(&hclog.LoggerOptions{Output: out, Level: hclog.Info}),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.WaitReady(ctx); err != nil {
		b.Shutdown(context.Background())
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Shutdown(context.Background()) })
	return b
}

// newClient returns a kgo client for b, closed at cleanup.
func newClient(t testing.TB, b *Broker, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(b.Addr().String()), kgo.WithLogger(nil)}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func newAdmin(t testing.TB, b *Broker) *kadm.Client {
	return kadm.NewClient(newClient(t, b))
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustCreateTopic(t testing.TB, adm *kadm.Client, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	resp, err := adm.CreateTopic(testContext(t), partitions, 1, configs, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic %s: %v %v", topic, err, resp.Err)
	}
}

func recordKey(i int) string { return fmt.Sprintf("key-%05d", i) }

func osStat(path string) (os.FileInfo, error) { return os.Stat(path) }

// rawBatch is one uncompressed record batch holding value, as a producer sends it.
func rawBatch(value string) []byte {
	rec := kmsg.Record{Value: []byte(value)}
	body := rec.AppendTo(nil)
	rec.Length = int32(len(body) - 1)
	rb := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, FirstTimestamp: time.Now().UnixMilli(),
		MaxTimestamp: time.Now().UnixMilli(), ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1,
		Records: rec.AppendTo(nil)}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// rawProduce sends one record to partition 0 of topic through b with the given acks and
// returns the partition's error code.
func rawProduce(t testing.TB, b *Broker, topic string, acks int16) int16 {
	t.Helper()
	cl := newClient(t, b)
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = acks, 15000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = rawBatch("raw")
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testContext(t), cl)
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// replicaBytes returns a replica's stored batches from its log start up to upTo.
func replicaBytes(lp *localPartition, upTo int64) []byte {
	var buf bytes.Buffer
	lp.WithLog(func(l *segment.Log) error {
		for off := l.LogStartOffset(); off < upTo; {
			r, err := l.Read(off, 1<<20, upTo)
			if err != nil || r.Size == 0 {
				return err
			}
			data, _ := r.Bytes()
			buf.Write(data)
			off = r.LastOffset + 1
		}
		return nil
	})
	return buf.Bytes()
}
