package broker

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// testLogWriter sends a node's log lines to t.Log with a prefix until the test's
// cleanup ends; lines a goroutine still writes after that (a Raft transport's
// connection handler, say) are dropped, since t.Log then races with the test's end.
type testLogWriter struct {
	t      testing.TB
	prefix string
	mu     sync.Mutex
	done   bool // guarded by mu
}

// newTestLogWriter returns t's log writer for prefix. Make it before the node it
// serves, so that its cleanup runs after the node's (cleanups run last first).
func newTestLogWriter(t testing.TB, prefix string) *testLogWriter {
	w := &testLogWriter{t: t, prefix: prefix}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return w
}

func (w *testLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(w.prefix + strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// startTestBroker starts a one-node broker in dir (a new temp dir when empty) on
// 127.0.0.1:0 ports and waits until it is ready.
func startTestBroker(t testing.TB, dir string, props map[string]string) *Broker {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	var out io.Writer = newTestLogWriter(t, "node-0 ")
	return startReadyBroker(t, Config{
		NodeID: 0, DataDir: dir, Listen: "127.0.0.1:0", RaftListen: "127.0.0.1:0", Properties: props,
		Logger: hclog.New(&hclog.LoggerOptions{Output: out, Level: hclog.Info}),
	})
}

// startReadyBroker starts a broker with cfg, waits until it is ready and shuts it down
// at cleanup.
func startReadyBroker(t testing.TB, cfg Config) *Broker {
	t.Helper()
	b, err := Start(cfg)
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
//
// Its Produce and Fetch stop at v12 (a test's own MaxVersions overrides): the raw
// requests of these tests name topics, which v13+ replace with topic ids.
func newClient(t testing.TB, b *Broker, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(b.Addr().String()), kgo.WithLogger(nil), namedTopicVersions()}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// namedTopicVersions caps Produce and Fetch at v12, the last versions naming topics.
func namedTopicVersions() kgo.Opt {
	v := kversion.Stable()
	v.SetMaxKeyVersion(kmsg.Produce.Int16(), 12)
	v.SetMaxKeyVersion(kmsg.Fetch.Int16(), 12)
	return kgo.MaxVersions(v)
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
