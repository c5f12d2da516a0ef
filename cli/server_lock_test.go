package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/broker"
	"github.com/petrel-broker/petrel/cli/perf"
)

// runPetrelEnv makes this test binary run the petrel command line with its arguments
// (TestMain) instead of the tests: a second process for the tests that need one.
const runPetrelEnv = "PETREL_TEST_RUN_PETREL"

// TestMain runs the petrel processes of tests that need a second one (runPetrelEnv),
// and `petrel perf floor`'s node processes should a test here run it, instead of the
// tests.
func TestMain(m *testing.M) {
	if os.Getenv(perf.FloorNodeEnv) != "" || os.Getenv(runPetrelEnv) != "" {
		os.Exit(Run(os.Args))
	}
	os.Exit(m.Run())
}

// TestServerRefusesADataDirInUse: a second `petrel server` on a data directory that a
// running node holds exits at once, non-zero, naming the holder's pid, before it opens
// any port: its --listen port is held by this test, so binding it first would fail
// with another message, and with port 0 it would otherwise wait for raft.db's lock
// forever.
func TestServerRefusesADataDirInUse(t *testing.T) {
	dir := t.TempDir()
	b, err := broker.Start(broker.Config{NodeID: 0, DataDir: dir, Listen: "127.0.0.1:0", RaftListen: "127.0.0.1:0",
		Logger: hclog.New(&hclog.LoggerOptions{Output: testLogWriter{T: t}, Level: hclog.Warn})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Shutdown(context.Background()) })
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	want := fmt.Sprintf("petrel: data directory %s is in use by process %d", dir, os.Getpid())
	for _, listen := range []string{held.Addr().String(), "127.0.0.1:0"} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cmd := exec.CommandContext(ctx, os.Args[0], "server", "--data-dir", dir, "--listen", listen,
			"--raft-listen", "127.0.0.1:0", "--metrics-listen", "")
		cmd.Env = append(os.Environ(), runPetrelEnv+"=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err := cmd.Run()
		took := time.Since(start)
		cancel()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() <= 0 {
			t.Fatalf("--listen %s: the second process ended with %v after %s, want a non-zero exit\nstderr: %s", listen, err, took, stderr.String())
		}
		if !strings.Contains(stderr.String(), want) {
			t.Fatalf("--listen %s: stderr %q, want %q", listen, stderr.String(), want)
		}
		if strings.Contains(stdout.String(), "listening") {
			t.Fatalf("--listen %s: the second process started listening: %q", listen, stdout.String())
		}
		if took > 10*time.Second {
			t.Fatalf("--listen %s: the second process took %s to exit", listen, took)
		}
	}
}
