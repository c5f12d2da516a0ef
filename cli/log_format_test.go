package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// jsonLogLine is the part of hclog's JSON line the tests read.
type jsonLogLine struct {
	Timestamp string `json:"@timestamp"`
	Level     string `json:"@level"`
	Message   string `json:"@message"`
}

// parseJSONLog parses line as one of hclog's JSON lines, failing t otherwise.
func parseJSONLog(t *testing.T, line string) jsonLogLine {
	t.Helper()
	var l jsonLogLine
	if err := json.Unmarshal([]byte(line), &l); err != nil || l.Level == "" || l.Message == "" || l.Timestamp == "" {
		t.Fatalf("log line %q is not hclog JSON with @timestamp, @level and @message (%v)", line, err)
	}
	return l
}

// TestServerLogFormatJSON runs `petrel server --log-format json` in a process, stops
// it with SIGTERM, and reads its log: every line is a JSON object with @timestamp,
// @level and @message, and none is at WARN or ERROR (a one-node start and a clean
// SIGTERM are routine).
func TestServerLogFormatJSON(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "server", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0",
		"--raft-listen", "127.0.0.1:0", "--metrics-listen", "", "--log-format", "json")
	cmd.Env = append(os.Environ(), runPetrelEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var levels []string
	sawShutDown := false
	scanner := bufio.NewScanner(stderr)
	for scanner.Scan() {
		line := scanner.Text()
		t.Log(line)
		l := parseJSONLog(t, line)
		if l.Level == "warn" || l.Level == "error" {
			levels = append(levels, l.Level+" "+l.Message)
		}
		switch l.Message {
		case "metadata caught up":
			// Logged after "broker started", once the node is ready; by then the
			// server waits for the signal.
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		case "broker shut down":
			sawShutDown = true
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("petrel server after SIGTERM: %v", err)
	}
	if !sawShutDown {
		t.Error(`no "broker shut down" line`)
	}
	if len(levels) > 0 {
		t.Errorf("a one-node start and SIGTERM logged at WARN or ERROR: %v", levels)
	}
}

// TestLogFormatFromEnvironment: PETREL_LOG_FORMAT=json makes a client command's log
// lines JSON too; the final error stays petrel's one plain line.
func TestLogFormatFromEnvironment(t *testing.T) {
	t.Setenv("PETREL_LOG_FORMAT", "json")
	r := run(t, "", "topics", "list", "-b", closedPort(t), "--log-level", "debug")
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if r.code != 1 || len(lines) < 2 || !strings.HasPrefix(lines[len(lines)-1], "petrel: ") {
		t.Fatalf("exit %d, stderr %q: want exit 1, debug log lines and the error", r.code, r.stderr)
	}
	for _, line := range lines[:len(lines)-1] {
		parseJSONLog(t, line)
	}
}

// TestServerSIGTERMDuringStart: a SIGTERM that arrives while the broker is still
// starting (at its first Raft log line, inside broker.Start) stops it gracefully once
// the start is done (a "broker shut down" line, exit status 0) instead of killing the
// process where it stands.
func TestServerSIGTERMDuringStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "server", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0",
		"--raft-listen", "127.0.0.1:0", "--metrics-listen", "", "--log-format", "json")
	cmd.Env = append(os.Environ(), runPetrelEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	signalled, sawShutDown := false, false
	scanner := bufio.NewScanner(stderr)
	for scanner.Scan() {
		l := parseJSONLog(t, scanner.Text())
		t.Log(scanner.Text())
		if !signalled && strings.Contains(l.Message, "initial configuration") {
			signalled = true
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		}
		if l.Message == "broker shut down" {
			sawShutDown = true
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("petrel server after a SIGTERM during its start: %v", err)
	}
	if !signalled || !sawShutDown {
		t.Errorf("signalled during start: %v; a \"broker shut down\" line: %v", signalled, sawShutDown)
	}
}
