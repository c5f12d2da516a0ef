package cli

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/broker"
)

// serverExit runs `petrel server args...` in a second process and returns its exit code
// (-1 when it was still running after limit and was killed), stderr and how long it ran.
func serverExit(t *testing.T, limit time.Duration, args ...string) (int, string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], append([]string{"server"}, args...)...)
	cmd.Env = append(os.Environ(), runPetrelEnv+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String(), time.Since(start)
}

// TestServerRefusesChangedVoters: a node restarted with a --voters list other than the
// quorum its data directory holds is refused at once, with the current membership and
// the --voters to start with; it used to start and ignore the list without a word.
func TestServerRefusesChangedVoters(t *testing.T) {
	dir := t.TempDir()
	raftLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := raftLn.Addr().String()
	b, err := broker.Start(broker.Config{NodeID: 0, DataDir: dir, Listen: "127.0.0.1:0", RaftListen: addr, RaftListener: raftLn,
		Voters: []broker.Voter{{ID: 0, Addr: addr}}, Logger: hclog.New(&hclog.LoggerOptions{Output: testLogWriter{T: t}, Level: hclog.Warn})})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.WaitReady(ctx); err != nil {
		b.Kill()
		t.Fatal(err)
	}
	if err := b.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	code, stderr, took := serverExit(t, 20*time.Second, "--node-id", "0", "--data-dir", dir, "--listen", "127.0.0.1:0",
		"--raft-listen", addr, "--voters", "0@"+addr+",1@"+closedPort(t), "--metrics-listen", "")
	if code <= 0 || took > 10*time.Second {
		t.Fatalf("a changed --voters: exit %d after %s, want a non-zero exit at once\nstderr: %s", code, took, stderr)
	}
	for _, want := range []string{"is different from the voter set", "voters 0@" + addr + ".", "Start with --voters 0@" + addr + ";"} {
		if !strings.Contains(stderr, want) {
			t.Fatalf("stderr %q does not say %q", stderr, want)
		}
	}
}

// TestServerOutsideVotersWithoutJoinExits: a new node outside --voters without --join
// exits at once saying what to do; it used to wait forever for someone to add it.
func TestServerOutsideVotersWithoutJoinExits(t *testing.T) {
	code, stderr, took := serverExit(t, 20*time.Second, "--node-id", "3", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0",
		"--raft-listen", "127.0.0.1:0", "--voters", "0@"+closedPort(t), "--metrics-listen", "")
	if code <= 0 || took > 10*time.Second {
		t.Fatalf("outside --voters without --join: exit %d after %s, want a non-zero exit at once\nstderr: %s", code, took, stderr)
	}
	if !strings.Contains(stderr, "node 3 is not in --voters") || !strings.Contains(stderr, "pass --join HOST:PORT") {
		t.Fatalf("stderr %q does not say to pass --join", stderr)
	}
	if strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
		t.Fatalf("stderr is not one line: %q", stderr)
	}
}
