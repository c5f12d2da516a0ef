package cli

import (
	"regexp"
	"strings"
	"testing"
)

// petrel features: describe in kafka-features.sh's lines, upgrade, downgrade and
// disable with their dry runs, and Kafka's refusals as a failed operation.
func TestFeatures_DescribeUpgradeDowngradeDisable(t *testing.T) {
	b := startBroker(t, nil)
	bs := bootstrap(b)
	r := mustRun(t, "", "features", "describe", bs)
	want := regexp.MustCompile(`^Feature: eligible\.leader\.replicas\.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 1\tEpoch: \d+\n` +
		`Feature: group\.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 1\tEpoch: \d+\n` +
		`Feature: metadata\.version\tSupportedMinVersion: 3\.3-IV3\tSupportedMaxVersion: 4\.2-IV1\tFinalizedVersionLevel: 4\.2-IV1\tEpoch: \d+\n` +
		`Feature: share\.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 1\tEpoch: \d+\n` +
		`Feature: transaction\.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 2\tFinalizedVersionLevel: 2\tEpoch: \d+\n$`)
	if !want.MatchString(r.stdout) {
		t.Fatalf("describe:\n%s", r.stdout)
	}

	r = mustRun(t, "", "features", "downgrade", bs, "--feature", "transaction.version=0", "--dry-run")
	if r.stdout != "transaction.version can be downgraded to 0.\n" {
		t.Fatalf("dry run: %q", r.stdout)
	}
	if !strings.Contains(mustRun(t, "", "features", "describe", bs).stdout, "transaction.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 2\tFinalizedVersionLevel: 2") {
		t.Fatal("the dry run changed the level")
	}
	r = mustRun(t, "", "features", "downgrade", bs, "--feature", "transaction.version=0")
	if r.stdout != "transaction.version was downgraded to 0.\n" {
		t.Fatalf("downgrade: %q", r.stdout)
	}
	r = mustRun(t, "", "features", "disable", bs, "--feature", "eligible.leader.replicas.version")
	if r.stdout != "eligible.leader.replicas.version was disabled.\n" {
		t.Fatalf("disable: %q", r.stdout)
	}
	r = mustRun(t, "", "features", "upgrade", bs, "--feature", "transaction.version=1", "--metadata", "4.2")
	if r.stdout != "metadata.version was upgraded to 4.2-IV1.\ntransaction.version was upgraded to 1.\n" {
		t.Fatalf("upgrade: %q", r.stdout)
	}
	out := mustRun(t, "", "features", "describe", bs).stdout
	if !strings.Contains(out, "eligible.leader.replicas.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 0") ||
		!strings.Contains(out, "transaction.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 2\tFinalizedVersionLevel: 1") {
		t.Fatalf("describe after the changes:\n%s", out)
	}

	r = mustFail(t, "1 out of 1 operation(s) failed", "", "features", "downgrade", bs, "--metadata", "4.0-IV0")
	if !strings.Contains(r.stdout, "Could not downgrade metadata.version to 4.0-IV0. INVALID_UPDATE_VERSION") ||
		!strings.Contains(r.stdout, "might delete metadata information") {
		t.Fatalf("refused downgrade: %q", r.stdout)
	}
	mustFail(t, "1 out of 1 operation(s) failed", "", "features", "upgrade", bs, "--feature", "transaction.version=3")
	mustFail(t, "want a feature and a level", "", "features", "upgrade", bs, "--feature", "transaction.version")
	mustFail(t, "unknown metadata.version", "", "features", "upgrade", bs, "--metadata", "9.9")
	mustFail(t, "give --metadata or at least one --feature", "", "features", "upgrade", bs)
}
