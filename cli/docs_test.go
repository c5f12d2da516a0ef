package cli

// Checks that the getting-started material says what works: the README's ways to get
// the binary and its group example, the systemd unit's command line, the operations
// page's opening.

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

func readRepoFile(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile("../" + path)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func TestReadmeGettingStarted(t *testing.T) {
	readme := readRepoFile(t, "README.md")
	for _, want := range []string{
		"    go run . dev\n", "    go test -race -timeout 20m ./...\n", // the two commands
		"go install github.com/petrel-broker/petrel@latest", "go build -o petrel .", // getting the binary
		"kcat -b 127.0.0.1:9092 -G g -o beginning -e t", // a group example with offsets to show
		"config/server.properties", "docs/petrel.service",
	} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md does not say %q", want)
		}
	}
	ops := readRepoFile(t, "docs/operations.md")
	if strings.Contains(ops, "there is no preferred-leader\n  election") || strings.Contains(ops, "no preferred-leader election") {
		t.Error("docs/operations.md still says there is no preferred-leader election")
	}
	for _, want := range []string{"petrel.service", "config/server.properties", "-o json", "--under-replicated-partitions", "petrel topics offsets"} {
		if !strings.Contains(ops, want) {
			t.Errorf("docs/operations.md does not mention %q", want)
		}
	}
}

// The systemd unit's ExecStart, with the example values of its environment file, is a
// command line petrel server accepts (checked with --print-config).
func TestSystemdUnitCommandLine(t *testing.T) {
	unit := readRepoFile(t, "docs/petrel.service")
	env := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^#\s+(PETREL_[A-Z_]+)=(\S+)`).FindAllStringSubmatch(unit, -1) {
		env[m[1]] = m[2]
	}
	m := regexp.MustCompile(`(?ms)^ExecStart=(.*?[^\\])\n`).FindStringSubmatch(unit)
	if m == nil {
		t.Fatal("no ExecStart in docs/petrel.service")
	}
	args := strings.Fields(strings.ReplaceAll(m[1], "\\\n", " "))
	if args[0] != "/usr/local/bin/petrel" || args[1] != "server" {
		t.Fatalf("ExecStart runs %q", args[:2])
	}
	dataDir := t.TempDir()
	var cmdline []string
	for _, a := range args[1:] {
		a = regexp.MustCompile(`\$\{(\w+)\}`).ReplaceAllStringFunc(a, func(v string) string {
			name := v[2 : len(v)-1]
			if env[name] == "" {
				t.Fatalf("ExecStart uses %s, which the unit's example environment does not give", name)
			}
			return env[name]
		})
		switch a {
		case "/var/lib/petrel":
			a = dataDir
		case "/etc/petrel/server.properties":
			a = sampleProperties
		}
		cmdline = append(cmdline, a)
	}
	for name, value := range env { // the example's PETREL_SET_* and PETREL_LOG_LEVEL
		if strings.HasPrefix(name, "PETREL_SET_") || name == "PETREL_LOG_LEVEL" {
			t.Setenv(name, value)
		}
	}
	r := mustRun(t, "", append(cmdline, "--print-config")...)
	if row := configRow(t, r.stdout, "broker.rack"); row[1] != env["PETREL_SET_BROKER_RACK"] {
		t.Errorf("broker.rack from the unit's environment: %q", row)
	}
}

// The README's consumer-group example, run with kcat: the group commits what it read,
// so `groups describe` shows offsets (a new group without -o beginning starts at the
// end and commits nothing, which showed an empty table).
func TestReadmeGroupExampleWithKcat(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat not installed")
	}
	b := startBroker(t, nil)
	addr := b.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	produce := exec.CommandContext(ctx, kcat, "-P", "-b", addr, "-t", "t")
	produce.Stdin = strings.NewReader("hello\nworld\n")
	if out, err := produce.CombinedOutput(); err != nil {
		t.Fatalf("kcat -P: %v\n%s", err, out)
	}
	if out, err := exec.CommandContext(ctx, kcat, "-b", addr, "-G", "g", "-o", "beginning", "-e", "t").CombinedOutput(); err != nil {
		t.Fatalf("kcat -G: %v\n%s", err, out)
	}
	r := mustRun(t, "", "groups", "describe", "g", "-b", addr)
	if !regexp.MustCompile(`(?m)^g +t +0 +2 +2 +0 +- +- +-$`).MatchString(r.stdout) {
		t.Fatalf("groups describe g after the README's kcat example:\n%s", r.stdout)
	}
}

// The listener rule is stated once, in docs/configuration.md; docs/operations.md and
// the sample properties point to it instead of saying another rule ("the property
// wins" once disagreed with the page that said the flag supplies the value).
func TestListenerRuleStatedOnce(t *testing.T) {
	conf := readRepoFile(t, "docs/configuration.md")
	if !strings.Contains(conf, "\n## Listeners\n") {
		t.Fatal("docs/configuration.md has no Listeners section")
	}
	for _, path := range []string{"docs/configuration.md", "docs/operations.md", "config/server.properties", "README.md"} {
		text := readRepoFile(t, path)
		for _, stale := range []string{"the property wins", "The node's identity and addresses come only from the flags", "default\n`127.0.0.1:9644`"} {
			if strings.Contains(text, stale) {
				t.Errorf("%s still says %q", path, stale)
			}
		}
	}
	if ops := readRepoFile(t, "docs/operations.md"); !strings.Contains(ops, "configuration.md#listeners") {
		t.Error("docs/operations.md does not point to the listener rule in docs/configuration.md")
	}
}
