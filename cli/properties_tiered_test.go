package cli

import (
	"strings"
	"testing"
)

// TestServerPrintConfig_TieredStorageProperties: an Aiven-plugin server.properties
// section carries over: its properties are known (no "not implemented" warning), the
// S3 secret is never printed, and remote.log.storage.system.enable=true, acted on (the
// remote log manager copies segments), draws no warning.
func TestServerPrintConfig_TieredStorageProperties(t *testing.T) {
	r := printConfigRun(t,
		"--set", "remote.log.storage.system.enable=true",
		"--set", "rsm.config.storage.s3.endpoint.url=http://127.0.0.1:7070",
		"--set", "rsm.config.storage.s3.bucket.name=petrel-segments",
		"--set", "rsm.config.storage.s3.path.style.access.enabled=true",
		"--set", "rsm.config.storage.aws.secret.access.key=s3-very-secret")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if got := strings.Join(configRow(t, r.stdout, "rsm.config.storage.s3.bucket.name")[1:], " "); got != "petrel-segments --set" {
		t.Errorf("bucket row %q", got)
	}
	if strings.Contains(r.stdout+r.stderr, "s3-very-secret") {
		t.Errorf("the S3 secret is printed:\n%s\n%s", r.stdout, r.stderr)
	}
	if strings.Contains(r.stderr, "rsm.config") {
		t.Errorf("a warning about an rsm.config property, which the table knows: %q", r.stderr)
	}
	if strings.Contains(r.stderr, "remote.log.storage.system.enable") {
		t.Errorf("a warning about remote.log.storage.system.enable, which is acted on: %q", r.stderr)
	}
}
