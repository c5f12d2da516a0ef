package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sampleProperties is the repository's sample server.properties.
const sampleProperties = "../config/server.properties"

// The sample config/server.properties is accepted with --strict-config: every name in
// it is one Petrel knows and implements, every value valid, and each is taken from the
// file.
func TestSampleServerProperties(t *testing.T) {
	r := printConfigRun(t, "--config", sampleProperties, "--strict-config")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("the sample is refused or warned about: exit %d, stderr %q", r.code, r.stderr)
	}
	raw, err := os.ReadFile(sampleProperties)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, _ := strings.Cut(line, "=")
		if row := configRow(t, r.stdout, name); row[1] != value || row[2] != "config" {
			t.Errorf("%s: --print-config row %q, want %s from the config file", name, row, value)
		}
		n++
	}
	if n < 15 {
		t.Fatalf("the sample sets only %d properties", n)
	}
	// The check is real: one unknown name added to it is refused.
	bad := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(bad, append(raw, "log.retention.hourz=1\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	r = printConfigRun(t, "--config", bad, "--strict-config")
	if r.code != 1 || !strings.Contains(r.stderr, "log.retention.hourz") {
		t.Fatalf("an unknown property in the sample was not refused: exit %d, stderr %q", r.code, r.stderr)
	}
}
