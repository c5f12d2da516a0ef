// Package clitest holds the test helpers that the command packages (cli, cli/perf)
// share: a one-node broker to run commands against, and running a command line with
// its exit code and output. Only tests import it.
package clitest

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/broker"
)

// LogWriter sends a node's log lines to T.Log.
type LogWriter struct{ T testing.TB }

func (w LogWriter) Write(p []byte) (int, error) {
	w.T.Log("node-0 " + strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// StartBroker starts a one-node broker on 127.0.0.1:0 ports in a temp dir, waits until
// it is ready and shuts it down at cleanup.
func StartBroker(t testing.TB, props map[string]string) *broker.Broker {
	t.Helper()
	b, err := broker.Start(broker.Config{
		NodeID: 0, DataDir: t.TempDir(), Listen: "127.0.0.1:0", RaftListen: "127.0.0.1:0", MetricsListen: "127.0.0.1:0", Properties: props,
		Logger: hclog.New(&hclog.LoggerOptions{Output: LogWriter{t}, Level: hclog.Warn}),
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

// Bootstrap is the --bootstrap-server flag for b.
func Bootstrap(b *broker.Broker) string { return "--bootstrap-server=" + b.Addr().String() }

// Runner runs a command line (program name first) with the given streams and returns
// its exit code: cli.RunWithInput, or a test app around one command.
type Runner func(args []string, stdin io.Reader, stdout, stderr io.Writer) int

// Result is one command run's exit code and output.
type Result struct {
	Code           int
	Stdout, Stderr string
	Took           time.Duration
}

// Run runs petrel with args (without the program name) and stdin, and logs the outcome.
func Run(t testing.TB, runner Runner, stdin string, args ...string) Result {
	t.Helper()
	var out, errOut bytes.Buffer
	var in io.Reader = strings.NewReader(stdin)
	start := time.Now()
	code := runner(append([]string{"petrel"}, args...), in, &out, &errOut)
	r := Result{Code: code, Stdout: out.String(), Stderr: errOut.String(), Took: time.Since(start)}
	t.Logf("petrel %s -> %d (%s)\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, r.Took.Round(time.Millisecond), r.Stdout, r.Stderr)
	return r
}

// MustRun is Run that fails the test unless the command exits 0.
func MustRun(t testing.TB, runner Runner, stdin string, args ...string) Result {
	t.Helper()
	r := Run(t, runner, stdin, args...)
	if r.Code != 0 {
		t.Fatalf("petrel %s: exit code %d, stderr %q", strings.Join(args, " "), r.Code, r.Stderr)
	}
	return r
}

// MustFail runs a command that must exit 1 with a one-line error containing want.
func MustFail(t testing.TB, runner Runner, want string, stdin string, args ...string) Result {
	t.Helper()
	r := Run(t, runner, stdin, args...)
	if r.Code != 1 {
		t.Fatalf("petrel %s: exit code %d, want 1; stderr %q", strings.Join(args, " "), r.Code, r.Stderr)
	}
	AssertCleanError(t, r.Stderr, want)
	return r
}

// AssertCleanError checks stderr ends with one "petrel: ..." line containing want and
// holds no Go panic or stack trace.
func AssertCleanError(t testing.TB, stderr, want string) {
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
