package cli

// The server's listener flags by the one listener rule (docs/configuration.md,
// "Listeners"), and the metrics listener derived per node: each case is what an
// operator sees from `petrel server ... --print-config`, which runs the checks a start
// runs.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
)

// writeProperties writes a properties file in a temporary directory.
func writeProperties(t *testing.T, text string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// listeners= in a --config file no longer overrides --listen without a word: a
// different value is refused, the same one accepted, and either alone is fine.
func TestServer_ListenConflictsWithListenersProperty(t *testing.T) {
	file := writeProperties(t, "listeners=PLAINTEXT://127.0.0.1:19092\n")
	r := printConfigRun(t, "--config", file, "--listen", "127.0.0.1:9092")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1", r.code)
	}
	assertCleanError(t, r.stderr, "--listen 127.0.0.1:9092 conflicts with listeners=PLAINTEXT://127.0.0.1:19092 (config file)")

	r = printConfigRun(t, "--config", file, "--listen", "127.0.0.1:19092")
	if r.code != 0 {
		t.Fatalf("the same listener from both was refused: %q", r.stderr)
	}
	r = printConfigRun(t, "--config", file)
	if row := configRow(t, r.stdout, "listeners"); r.code != 0 || row[1] != "PLAINTEXT://127.0.0.1:19092" || row[2] != "config" {
		t.Fatalf("listeners from the file alone: exit %d, row %q", r.code, row)
	}
	mustFail(t, "--advertised 10.0.0.1:9092 conflicts with advertised.listeners=PLAINTEXT://10.0.0.2:9092 (--set)",
		"", "server", "--data-dir", t.TempDir(), "--print-config", "--advertised", "10.0.0.1:9092", "--set", "advertised.listeners=PLAINTEXT://10.0.0.2:9092")
}

// --listen 0.0.0.0:P without an advertised address used to advertise :::P; Kafka
// refuses to start, and so does Petrel, with Kafka's message.
func TestServer_UnroutableAdvertisedAddressRefused(t *testing.T) {
	const kafkaMsg = "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address."
	mustFail(t, kafkaMsg, "", "server", "--data-dir", t.TempDir(), "--print-config", "--listen", "0.0.0.0:9092")
	mustFail(t, kafkaMsg, "", "server", "--data-dir", t.TempDir(), "--print-config", "--set", "listeners=PLAINTEXT://0.0.0.0:9092")
	mustFail(t, kafkaMsg, "", "server", "--data-dir", t.TempDir(), "--print-config", "--listen", "127.0.0.1:9092", "--advertised", "0.0.0.0:9092")
	mustFail(t, "nonroutable meta-address ::", "", "server", "--data-dir", t.TempDir(), "--print-config", "--listen", "[::]:9092")
	r := printConfigRun(t, "--listen", "0.0.0.0:9092", "--advertised", "broker0.example:9092")
	if r.code != 0 {
		t.Fatalf("0.0.0.0 with an advertised address was refused: %q", r.stderr)
	}
}

// A listener name the protocol map does not know is refused with Kafka's wording.
func TestServer_ListenerWithoutProtocolRefused(t *testing.T) {
	mustFail(t, "No security protocol defined for listener EXTERNAL", "",
		"server", "--data-dir", t.TempDir(), "--print-config", "--set", "listeners=EXTERNAL://127.0.0.1:9094")
	r := printConfigRun(t, "--set", "listeners=EXTERNAL://127.0.0.1:9094", "--set", "listener.security.protocol.map=EXTERNAL:PLAINTEXT",
		"--set", "inter.broker.listener.name=EXTERNAL")
	if r.code != 0 {
		t.Fatalf("a mapped listener name was refused: %q", r.stderr)
	}
}

// The metrics listener is 127.0.0.1:(9644 + node id) when not given, so nodes on one
// host never collide; a node id past the port range gets a one-line hint.
func TestServer_MetricsListenDerivedPerNode(t *testing.T) {
	for id, want := range map[string]string{"0": "127.0.0.1:9644", "2": "127.0.0.1:9646", "7": "127.0.0.1:9651"} {
		r := printConfigRun(t, "--node-id", id)
		if row := configRow(t, r.stdout, "petrel.metrics.listener"); row[1] != want || row[2] != "--metrics-listen" {
			t.Errorf("node %s: row %q, want %s", id, row, want)
		}
	}
	r := printConfigRun(t, "--node-id", "5", "--metrics-listen", "127.0.0.1:19644")
	if row := configRow(t, r.stdout, "petrel.metrics.listener"); row[1] != "127.0.0.1:19644" {
		t.Errorf("an explicit --metrics-listen: row %q", row)
	}
	r = printConfigRun(t, "--node-id", "5", "--metrics-listen", "")
	if row := configRow(t, r.stdout, "petrel.metrics.listener"); row[1] != "null" {
		t.Errorf("--metrics-listen \"\": row %q", row)
	}
	mustFail(t, "give --metrics-listen host:port", "", "server", "--data-dir", t.TempDir(), "--print-config", "--node-id", "70000")
}

// petrel top finds every broker's metrics endpoint from the brokers themselves
// (DescribeConfigs petrel.metrics.listener): three brokers whose metrics listen on
// ports of their own (not 9644 + id) all show up with their figures, without --metrics.
// Right after the start a broker can miss one of --once's two samples (its answer or
// its scrape late on a loaded machine: no rates for it then), so the run is repeated
// until one shows every broker.
func TestTop_FindsPublishedMetricsEndpoints(t *testing.T) {
	tc := startCluster(t, 3, nil)
	testwait.For(t, 30*time.Second, func() error {
		r := run(t, "", "top", "--once", tc.bootstrap(), "--interval", "300ms", "--timeout", "10s")
		if r.code != 0 {
			return fmt.Errorf("exit %d: %s", r.code, r.stderr)
		}
		if strings.Contains(r.stdout, "no answer from metrics endpoint") {
			return fmt.Errorf("top tried an endpoint the brokers did not publish:\n%s", r.stdout)
		}
		for i, b := range tc.brokers {
			row := regexp.MustCompile(`(?m)^` + strconv.Itoa(i) + `\*? +` + regexp.QuoteMeta(b.Addr().String()) + ` +up +\d`)
			if !row.MatchString(r.stdout) {
				return fmt.Errorf("broker %d (metrics %s) is not up with figures in\n%s", i, b.MetricsAddr(), r.stdout)
			}
		}
		return nil
	})
}
