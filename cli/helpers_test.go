package cli

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/broker"
)

// testLogWriter sends a node's log lines to t.Log.
type testLogWriter struct{ t testing.TB }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log("node-0 " + strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// startBroker starts a one-node broker on 127.0.0.1:0 ports in a temp dir, waits until
// it is ready and shuts it down at cleanup.
func startBroker(t testing.TB, props map[string]string) *broker.Broker {
	t.Helper()
	b, err := broker.Start(broker.Config{
		NodeID: 0, DataDir: t.TempDir(), Listen: "127.0.0.1:0", RaftListen: "127.0.0.1:0", MetricsListen: "127.0.0.1:0", Properties: props,
		Logger: hclog.New(&hclog.LoggerOptions{Output: testLogWriter{t}, Level: hclog.Warn}),
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
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		b.Shutdown(ctx)
	})
	return b
}

// result is one command run's exit code and output.
type result struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// run runs petrel with args (without the program name) and stdin, and logs the outcome.
func run(t testing.TB, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	var in io.Reader = strings.NewReader(stdin)
	start := time.Now()
	code := RunWithInput(append([]string{"petrel"}, args...), in, &out, &errOut)
	r := result{code: code, stdout: out.String(), stderr: errOut.String(), took: time.Since(start)}
	t.Logf("petrel %s -> %d (%s)\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, r.took.Round(time.Millisecond), r.stdout, r.stderr)
	return r
}

// mustRun is run that fails the test unless the command exits 0.
func mustRun(t testing.TB, stdin string, args ...string) result {
	t.Helper()
	r := run(t, stdin, args...)
	if r.code != 0 {
		t.Fatalf("petrel %s: exit code %d, stderr %q", strings.Join(args, " "), r.code, r.stderr)
	}
	return r
}

// mustFail runs a command that must exit 1 with a one-line error containing want.
func mustFail(t testing.TB, want string, stdin string, args ...string) result {
	t.Helper()
	r := run(t, stdin, args...)
	if r.code != 1 {
		t.Fatalf("petrel %s: exit code %d, want 1; stderr %q", strings.Join(args, " "), r.code, r.stderr)
	}
	assertCleanError(t, r.stderr, want)
	return r
}

// assertCleanError checks stderr ends with one "petrel: ..." line containing want and
// holds no Go panic or stack trace.
func assertCleanError(t testing.TB, stderr, want string) {
	t.Helper()
	if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, ".go:") {
		t.Fatalf("stderr looks like a crash: %q", stderr)
	}
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "petrel: ") || !strings.Contains(last, want) {
		t.Fatalf("last stderr line %q: want a petrel error containing %q", last, want)
	}
}

// bootstrap is the --bootstrap-server flag for b.
func bootstrap(b *broker.Broker) string { return "--bootstrap-server=" + b.Addr().String() }

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
