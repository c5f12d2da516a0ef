package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// printConfig runs `petrel server --print-config` with a temp data dir and args.
func printConfigRun(t *testing.T, args ...string) result {
	t.Helper()
	return run(t, "", append([]string{"server", "--data-dir", t.TempDir(), "--print-config"}, args...)...)
}

// configRow returns the whitespace-separated fields of the --print-config row for name.
func configRow(t *testing.T, out, name string) []string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == name {
			return f
		}
	}
	t.Fatalf("no row for %s in:\n%s", name, out)
	return nil
}

func TestServerPrintConfig_SourcesAndWholeValues(t *testing.T) {
	file := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(file, []byte("num.partitions=3\nlog.retention.hours=72\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PETREL_SET_DEFAULT_REPLICATION_FACTOR", "2")
	t.Setenv("PETREL_SET_LOG_RETENTION_HOURS", "48")
	r := printConfigRun(t, "--config", file,
		"--set", "log.retention.hours=1",
		"--set", "listeners=PLAINTEXT://a:1,SSL://b:2",
		"--set=sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"p,q\";")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for name, want := range map[string]string{
		"num.partitions":             "3 config file",
		"default.replication.factor": "2 environment",
		"log.retention.hours":        "1 --set",
		"log.retention.ms":           "3600000 --set (log.retention.hours=1)",
		"auto.create.topics.enable":  "true default",
		"listeners":                  "PLAINTEXT://a:1,SSL://b:2 --set",
	} {
		if got := strings.Join(configRow(t, r.stdout, name)[1:], " "); got != want {
			t.Errorf("%s: %q, expected %q", name, got, want)
		}
	}
	// The listeners property wins over --listen (its shorthand) and is shown once, whole.
	if n := len(regexp.MustCompile(`\nlisteners +`).FindAllString(r.stdout, -1)); n != 1 {
		t.Errorf("listeners shown %d times:\n%s", n, r.stdout)
	}
	if !strings.Contains(r.stdout, "[hidden]") || strings.Contains(r.stdout, "password=") {
		t.Errorf("the JAAS config is not hidden:\n%s", r.stdout)
	}
	if strings.Contains(r.stderr, "sasl.jaas.config") {
		t.Errorf("a warning about sasl.jaas.config, which is implemented: %q", r.stderr)
	}
}

func TestServerPrintConfig_Refusals(t *testing.T) {
	r := printConfigRun(t, "--set", "log.segment.bytes=-5")
	if r.code != 1 {
		t.Fatalf("exit %d", r.code)
	}
	assertCleanError(t, r.stderr, "Invalid value -5 for configuration log.segment.bytes: Value must be at least 14")

	r = printConfigRun(t, "--set", "log.retention.hour=1")
	if r.code != 0 || !strings.Contains(r.stderr, "did you mean log.retention.hours?") {
		t.Fatalf("a typo without --strict-config: exit %d, stderr %q", r.code, r.stderr)
	}
	r = printConfigRun(t, "--strict-config", "--set", "log.retention.hour=1")
	if r.code != 1 {
		t.Fatalf("--strict-config: exit %d", r.code)
	}
	assertCleanError(t, r.stderr, "(--strict-config): The configuration 'log.retention.hour' was supplied (--set) but isn't a known config; did you mean log.retention.hours?")

	r = printConfigRun(t, "--set", "no-equals-sign")
	assertCleanError(t, r.stderr, `--set "no-equals-sign" is not key=value`)
}

func TestServer_StrictConfigRefusesToStart(t *testing.T) {
	r := run(t, "", "server", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--raft-listen", "127.0.0.1:0",
		"--strict-config", "--set", "ssl.cipher.suites=TLS_AES_128_GCM_SHA256")
	if r.code != 1 {
		t.Fatalf("exit %d", r.code)
	}
	assertCleanError(t, r.stderr, "ssl.cipher.suites")
}

func TestTopicsCreate_ConfigValueKeepsCommas(t *testing.T) {
	b := startBroker(t, nil)
	bs := bootstrap(b)
	// Whole, a list value reaches the broker as one value; split at the comma,
	// "compact" would be a local "bad --config" error instead.
	mustRun(t, "", "topics", "create", bs, "--config", "cleanup.policy=compact,delete", "both")
	if r := mustRun(t, "", "topics", "describe", bs, "both"); !strings.Contains(r.stdout, "Configs: cleanup.policy=compact,delete") {
		t.Fatalf("describe: %q", r.stdout)
	}
	mustFail(t, "Invalid value -5 for configuration segment.bytes: Value must be at least 14", "", "topics", "create", bs, "--config", "segment.bytes=-5", "t")
	// Flags after the topic name (applied by clientcmd.Args) keep their commas too.
	mustFail(t, "Invalid value sideways for configuration cleanup.policy", "", "topics", "create", bs, "t", "--config", "cleanup.policy=delete,sideways")
	mustRun(t, "", "topics", "create", bs, "--config", "cleanup.policy=delete", "t", "--config", "retention.ms=60000")
	if r := mustRun(t, "", "topics", "describe", bs, "t"); !strings.Contains(r.stdout, "Configs: cleanup.policy=delete,retention.ms=60000") {
		t.Fatalf("describe: %q", r.stdout)
	}
}
