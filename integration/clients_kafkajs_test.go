package integration

// kafkajs (Node.js) through testdata/kafkajs/client.js: the idempotent producer
// (idempotent: true, which kafkajs allows only with maxInFlightRequests 1) and the group
// consumer (groupId). CI installs node and runs `npm ci` in testdata/kafkajs; a
// developer without them gets a skip.

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// kafkajsDir is the npm package of the kafkajs scripts.
const kafkajsDir = "testdata/kafkajs"

// kafkajsClient returns the kafkajs script client, or skips t (fails it in CI) when
// node or the installed kafkajs package is missing.
func kafkajsClient(t *testing.T) scriptClient {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		missingTool(t, "node is not installed (apt-get install nodejs npm)")
	}
	if _, err := os.Stat(filepath.Join(kafkajsDir, "node_modules", "kafkajs", "package.json")); err != nil {
		missingTool(t, "kafkajs is not installed (npm ci --prefix integration/testdata/kafkajs)")
	}
	script, err := filepath.Abs(filepath.Join(kafkajsDir, "client.js"))
	if err != nil {
		t.Fatal(err)
	}
	return scriptClient{name: "kafkajs", argv: []string{node, script}}
}

func TestKafkajs_IdempotentProduce(t *testing.T) {
	s := kafkajsClient(t)
	t.Parallel()
	testScriptIdempotentProduce(t, s)
}

func TestKafkajs_GroupCommitAndResume(t *testing.T) {
	s := kafkajsClient(t)
	t.Parallel()
	testScriptCommitAndResume(t, s)
}

func TestKafkajs_GroupSplit(t *testing.T) {
	s := kafkajsClient(t)
	t.Parallel()
	c := StartCluster(t, 1, groupOptions()...)
	runSplitScenario(t, c, "kafkajs", s.member())
}
