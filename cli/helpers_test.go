package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/broker"
	"github.com/petrel-broker/petrel/cli/internal/clitest"
)

// testLogWriter sends a node's log lines to t.Log.
type testLogWriter = clitest.LogWriter

// startBroker starts a one-node broker on 127.0.0.1:0 ports in a temp dir, waits until
// it is ready and shuts it down at cleanup.
func startBroker(t testing.TB, props map[string]string) *broker.Broker {
	t.Helper()
	return clitest.StartBroker(t, props)
}

// result is one command run's exit code and output.
type result struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

func resultOf(r clitest.Result) result {
	return result{code: r.Code, stdout: r.Stdout, stderr: r.Stderr, took: r.Took}
}

// run runs petrel with args (without the program name) and stdin, and logs the outcome.
func run(t testing.TB, stdin string, args ...string) result {
	t.Helper()
	return resultOf(clitest.Run(t, RunWithInput, stdin, args...))
}

// mustRun is run that fails the test unless the command exits 0.
func mustRun(t testing.TB, stdin string, args ...string) result {
	t.Helper()
	return resultOf(clitest.MustRun(t, RunWithInput, stdin, args...))
}

// mustFail runs a command that must exit 1 with a one-line error containing want.
func mustFail(t testing.TB, want string, stdin string, args ...string) result {
	t.Helper()
	return resultOf(clitest.MustFail(t, RunWithInput, want, stdin, args...))
}

// assertCleanError checks stderr ends with one "petrel: ..." line containing want and
// holds no Go panic or stack trace.
func assertCleanError(t testing.TB, stderr, want string) {
	t.Helper()
	clitest.AssertCleanError(t, stderr, want)
}

// bootstrap is the --bootstrap-server flag for b.
func bootstrap(b *broker.Broker) string { return clitest.Bootstrap(b) }

// closedPort returns a local address nothing listens on.
func closedPort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// silentListener accepts connections and never answers; it returns its address.
func silentListener(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return ln.Addr().String()
}

// lines builds newline-terminated input from its arguments.
func lines(ls ...string) string {
	if len(ls) == 0 {
		return ""
	}
	return strings.Join(ls, "\n") + "\n"
}

// testCluster is n brokers in one process, every one a Raft voter, on 127.0.0.1:0 ports
// (Kafka, Raft and metrics listeners bound first, the voter list built from them).
type testCluster struct {
	t       testing.TB
	brokers []*broker.Broker
	stopped []bool
}

// startCluster starts the brokers, waits until every one is ready and shuts the running
// ones down at cleanup.
func startCluster(t testing.TB, n int, props map[string]string) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, brokers: make([]*broker.Broker, n), stopped: make([]bool, n)}
	var kafkaLns, raftLns []net.Listener
	var voters []broker.Voter
	for i := range n {
		kl, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		rl, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		kafkaLns, raftLns = append(kafkaLns, kl), append(raftLns, rl)
		voters = append(voters, broker.Voter{ID: int32(i), Addr: rl.Addr().String()})
	}
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = t.TempDir()
	}
	t.Cleanup(tc.shutdown) // after TempDir's cleanups are registered, so it runs before them
	for i := range n {
		all := map[string]string{"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "250"}
		for k, v := range props {
			all[k] = v
		}
		b, err := broker.Start(broker.Config{
			NodeID: int32(i), DataDir: dirs[i],
			Listen: kafkaLns[i].Addr().String(), Advertised: kafkaLns[i].Addr().String(), RaftListen: raftLns[i].Addr().String(),
			Voters: voters, Properties: all, MetricsListen: "127.0.0.1:0",
			KafkaListener: kafkaLns[i], RaftListener: raftLns[i],
			Logger: hclog.New(&hclog.LoggerOptions{Output: testLogWriter{T: t}, Level: hclog.Warn, Name: fmt.Sprintf("node-%d", i)}), // logs say node-N
		})
		if err != nil {
			for j := i; j < n; j++ {
				kafkaLns[j].Close()
				raftLns[j].Close()
			}
			t.Fatalf("node-%d: %v", i, err)
		}
		tc.brokers[i] = b
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i, b := range tc.brokers {
		if err := b.WaitReady(ctx); err != nil {
			t.Fatalf("node-%d not ready: %v", i, err)
		}
	}
	return tc
}

// stop shuts node i down gracefully (a controlled shutdown: it is fenced at once).
func (tc *testCluster) stop(i int) {
	tc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tc.stopped[i] = true
	if err := tc.brokers[i].Shutdown(ctx); err != nil {
		tc.t.Logf("node-%d shutdown: %v", i, err)
	}
}

func (tc *testCluster) shutdown() {
	for i, b := range tc.brokers {
		if b != nil && !tc.stopped[i] {
			tc.stop(i)
		}
	}
}

// bootstrap is --bootstrap-server with every running node.
func (tc *testCluster) bootstrap() string {
	var addrs []string
	for i, b := range tc.brokers {
		if !tc.stopped[i] {
			addrs = append(addrs, b.Addr().String())
		}
	}
	return "--bootstrap-server=" + strings.Join(addrs, ",")
}

// metrics is --metrics with every node's endpoint, stopped ones included.
func (tc *testCluster) metrics() string {
	var addrs []string
	for _, b := range tc.brokers {
		addrs = append(addrs, b.MetricsAddr().String())
	}
	return "--metrics=" + strings.Join(addrs, ",")
}

// runQuiet is run without logging the outcome (for polls).
func runQuiet(stdin string, args ...string) result {
	var out, errOut bytes.Buffer
	start := time.Now()
	code := RunWithInput(append([]string{"petrel"}, args...), strings.NewReader(stdin), &out, &errOut)
	return result{code: code, stdout: out.String(), stderr: errOut.String(), took: time.Since(start)}
}
