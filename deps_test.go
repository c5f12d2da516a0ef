package main

import (
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is this module's import path.
const module = "github.com/petrel-broker/petrel"

// allowedInternal is the import graph of DESIGN.md and ../shared/design.md §2: which of
// our packages each package may import, and why. "" is the root (main).
var allowedInternal = map[string][]string{
	// main only parses the command line.
	"": {"cli"},
	// The CLI runs a node (broker), reads and prints properties with the property table
	// (config), plans reassignments with the controller's placement rule and names its
	// configs (metadata): the broker does not pass these through. Its client commands
	// share clientcmd with perf, and it registers `petrel perf` (cli/perf).
	"cli": {"broker", "config", "metadata", "cli/internal/clientcmd", "cli/perf", "cli/workload", testCLI},
	// The workload checker of `petrel verify workload` is a plain Kafka client (kgo,
	// kadm) so that it works against any Kafka cluster: nothing of ours but its tests'
	// one-node broker.
	"cli/workload": {testCLI},
	// perf's commands are Kafka clients built as every client command is (clientcmd);
	// its canned broker's record batches carry the one CRC-32C (segment).
	"cli/perf": {"cli/internal/clientcmd", "segment", testCLI},
	// The client commands' --command-config is read with the property loader (config)
	// and turned into TLS and SASL settings by the broker's client-security parser.
	"cli/internal/clientcmd": {"broker", "config"},
	// The command packages' shared test helpers run commands against a node (broker).
	testCLI: {"broker"},
	// The broker assembles everything; config is its property table.
	"broker": {"rpc", "replication", "fsm", "metadata", "segment", "compress", "coordinator", "group", "share", "shareleader", "txn", "metrics", "auth", "config", "controller", "telemetry", "tiered"},
	// The quorum controller decides over the image (metadata); it reaches Raft
	// through its own Quorum interface, which the broker implements; admin writes
	// validate topic configs against the property table (config).
	"controller": {"metadata", "config"},
	// The runtime hosts group and txn shards; the adapters from their Effects to runtime
	// Results live beside it.
	"coordinator": {"replication", "segment", "group", "txn", "share"},
	// Pure state machines, fed and drained by the broker.
	"group": {},
	"share": {},
	"txn":   {},
	// The share-partition leader runs share's state machines over the partitions'
	// logs (replication, segment) and persists through the share coordinator.
	"shareleader": {"share", "replication", "segment"},
	// Replication moves segment data over rpc to the replicas the image names.
	"replication": {"rpc", "segment", "metadata"},
	"fsm":         {"metadata"},
	"rpc":         {},
	// segment shares compress's "too large" sentinel.
	"segment":  {"compress"},
	"compress": {},
	"metadata": {},
	// config is pure: a refused value is metadata.ErrInvalidConfig (INVALID_CONFIG on
	// every path) and the cordon property is the one the image reads.
	"config":  {"metadata"},
	"metrics": {},
	"auth":    {},
	// Client telemetry (KIP-714) is pure: subscriptions, instances, OTLP decoding;
	// Kafka's subscription id is a CRC-32C (segment's one table).
	"telemetry": {"segment"},
	// Integration tests drive nodes (broker) and the CLI,
	// compare nodes' metadata images in metadata's own types, and run the workload
	// checker (cli/workload) with a fault hook that restarts a node.
	"integration": {"broker", "cli", "cli/workload", "metadata"},
	// Tiered storage copies segments to object storage through the S3 client library;
	// its metadata names topics by metadata's Uuid and converts to and from the image's
	// remote segment records. The broker wires it in (remote_log_manager.go).
	"tiered":    {"metadata", "segment"},
	testHelpers: {},
	testS3:      {},
}

// testHelpers is the one test-helper package (waiting for a condition): every
// package's tests may import it, no production code may.
const testHelpers = "internal/testwait"

// testS3 runs the S3-compatible server of the tiered storage tests: every package's
// tests may import it, no production code may.
const testS3 = "internal/s3test"

// testCLI is the command packages' test-helper package (a node to run commands
// against): the tests of the packages that list it may import it, no production code
// may.
const testCLI = "cli/internal/clitest"

// allowedExternal limits non-standard-library imports of non-test code. A package not
// listed may import any external module.
var allowedExternal = map[string][]string{
	"segment":     {},
	"compress":    {"github.com/klauspost/compress", "github.com/pierrec/lz4/v4"},
	"metadata":    {},
	"rpc":         {"golang.org/x/sync/semaphore", "github.com/twmb/franz-go/pkg/kmsg", "github.com/twmb/franz-go/pkg/kerr", "github.com/twmb/franz-go/pkg/kbin", "github.com/hashicorp/go-hclog"},
	"fsm":         {"github.com/hashicorp/raft"},
	"replication": {"github.com/twmb/franz-go/pkg/kmsg", "github.com/twmb/franz-go/pkg/kerr", "github.com/hashicorp/go-hclog"},
	"coordinator": {"github.com/twmb/franz-go/pkg/kmsg", "github.com/twmb/franz-go/pkg/kerr", "github.com/hashicorp/go-hclog"},
	"group":       {"github.com/twmb/franz-go/pkg/kmsg", "github.com/twmb/franz-go/pkg/kerr"},
	"share":       {"github.com/twmb/franz-go/pkg/kmsg", "github.com/twmb/franz-go/pkg/kerr"},
	"shareleader": {"github.com/twmb/franz-go/pkg/kmsg", "github.com/twmb/franz-go/pkg/kerr", "github.com/hashicorp/go-hclog"},
	"metrics":     {"github.com/prometheus/client_golang", "github.com/armon/go-metrics"},
	"telemetry":   {"github.com/prometheus/client_golang", "github.com/twmb/franz-go/pkg/kerr", "go.opentelemetry.io/proto/otlp", "google.golang.org/protobuf"},
	"txn":         {"github.com/twmb/franz-go/pkg/kmsg", "github.com/twmb/franz-go/pkg/kerr"},
	"auth":        {"github.com/xdg-go/scram"},
	"config":      {"github.com/magiconair/properties", "github.com/xrash/smetrics"},
	"controller":  {"github.com/hashicorp/go-hclog"},
	"tiered":      {"github.com/aws/aws-sdk-go-v2", "github.com/aws/smithy-go"},
}

// impure lists standard packages a pure state machine must not import (I/O and
// randomness come in through its Config).
var impure = map[string][]string{
	"group": {"crypto/rand", "math/rand", "math/rand/v2", "os", "net"},
	"share": {"crypto/rand", "math/rand", "math/rand/v2", "os", "net", "time"},
	"txn":   {"crypto/rand", "math/rand", "math/rand/v2", "os", "net"},
}

// raftImporters are the only packages that may import hashicorp/raft.
var raftImporters = []string{"fsm", "broker"}

type listedPackage struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

func TestImportGraph(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := map[string]bool{}
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		name := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		seen[name] = true
		allowed, known := allowedInternal[name]
		if !known {
			t.Errorf("package %q is not in the import graph; add it to DESIGN.md and this test", name)
			continue
		}
		check := func(imports []string, testCode bool) {
			for _, imp := range imports {
				if imp == module || strings.HasPrefix(imp, module+"/") {
					dep := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
					if dep == testHelpers || dep == testS3 {
						if !testCode {
							t.Errorf("%s imports %s: it is for tests only", p.ImportPath, imp)
						}
						continue
					}
					if dep == testCLI && !testCode {
						t.Errorf("%s imports %s: it is for tests only", p.ImportPath, imp)
					}
					if dep != name && !slices.Contains(allowed, dep) {
						t.Errorf("%s imports %s: not allowed by the import graph", p.ImportPath, imp)
					}
					continue
				}
				if !testCode && slices.Contains(impure[name], imp) {
					t.Errorf("%s imports %s: it is a pure state machine", p.ImportPath, imp)
				}
				if testCode || isStandard(imp) {
					continue
				}
				if strings.HasPrefix(imp, "github.com/hashicorp/raft") && !slices.Contains(raftImporters, name) {
					t.Errorf("%s imports %s: only %v may import hashicorp/raft", p.ImportPath, imp, raftImporters)
				}
				if ext, limited := allowedExternal[name]; limited && !hasPrefixIn(imp, ext) {
					t.Errorf("%s imports external %s: allowed are %v", p.ImportPath, imp, ext)
				}
			}
		}
		check(p.Imports, false)
		check(p.TestImports, true)
		check(p.XTestImports, true)
	}
	for name := range allowedInternal {
		if !seen[name] {
			t.Errorf("package %q of the import graph does not exist", name)
		}
	}
}

func isStandard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func hasPrefixIn(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// TestOneCRC32CTable: the CRC-32C table is segment's (segment.CRC32C); no other package
// builds its own.
func TestOneCRC32CTable(t *testing.T) {
	out, err := exec.Command("git", "grep", "-l", "crc32.MakeTable", "--", "*.go", ":!*_test.go").Output()
	if err != nil && len(out) == 0 {
		t.Skipf("git grep: %v", err)
	}
	files := strings.Fields(string(out))
	if len(files) != 1 || files[0] != "segment/batch.go" {
		t.Fatalf("CRC-32C tables built in %v, want only segment/batch.go", files)
	}
}
