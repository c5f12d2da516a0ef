package integration

// confluent-kafka-python (librdkafka) through testdata/confluent/client.py: the
// idempotent producer (enable.idempotence=True) and the group consumer (group.id). CI
// installs Debian's python3-confluent-kafka; a developer without it gets a skip.

import (
	"context"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

var (
	confluentPythonOnce sync.Once
	confluentPython     string // a python3 that imports confluent_kafka; "" if none
)

// findConfluentPython returns the first python3 that can import confluent_kafka:
// Debian's /usr/bin/python3 (where python3-confluent-kafka installs it) before the
// one on PATH, which may be another installation.
func findConfluentPython() string {
	candidates := []string{"/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	for _, p := range candidates {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := exec.CommandContext(ctx, p, "-c", "import confluent_kafka").Run()
		cancel()
		if err == nil {
			return p
		}
	}
	return ""
}

// confluentClient returns the confluent-kafka-python script client, or skips t (fails
// it in CI) when no python3 imports confluent_kafka.
func confluentClient(t *testing.T) scriptClient {
	t.Helper()
	confluentPythonOnce.Do(func() { confluentPython = findConfluentPython() })
	if confluentPython == "" {
		missingTool(t, "no python3 imports confluent_kafka (apt-get install python3-confluent-kafka)")
	}
	script, err := filepath.Abs("testdata/confluent/client.py")
	if err != nil {
		t.Fatal(err)
	}
	return scriptClient{name: "confluent", argv: []string{confluentPython, "-u", script}}
}

func TestConfluentPython_IdempotentProduce(t *testing.T) {
	s := confluentClient(t)
	t.Parallel()
	testScriptIdempotentProduce(t, s)
}

func TestConfluentPython_GroupCommitAndResume(t *testing.T) {
	s := confluentClient(t)
	t.Parallel()
	testScriptCommitAndResume(t, s)
}

func TestConfluentPython_GroupSplit(t *testing.T) {
	s := confluentClient(t)
	t.Parallel()
	c := StartCluster(t, 1, groupOptions()...)
	runSplitScenario(t, c, "confluent", s.member())
}
