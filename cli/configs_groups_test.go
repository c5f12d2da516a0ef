package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestConfigsGroups: `petrel configs --entity-type groups` describes and alters a
// consumer group's configs (the GROUP config resource) as kafka-configs.sh does in
// Kafka 4: the dynamic ones by default, every one with --all, INVALID_CONFIG outside
// the broker's group.consumer.* bounds, JSON output naming the entity type.
func TestConfigsGroups(t *testing.T) {
	b := startBroker(t, map[string]string{"group.consumer.heartbeat.interval.ms": "6000"})
	bs := bootstrap(b)

	r := mustRun(t, "", "configs", "alter", bs, "--entity-type", "groups", "--entity-name", "g", "--add-config", "consumer.session.timeout.ms=50000")
	if r.stdout != "Completed updating config for group g.\n" {
		t.Fatalf("configs alter: %q", r.stdout)
	}
	r = mustRun(t, "", "configs", "describe", bs, "--entity-type", "groups", "--entity-name", "g")
	want := "Dynamic configs for group g are:\n" +
		"  consumer.session.timeout.ms=50000 sensitive=false synonyms={GROUP_CONFIG:consumer.session.timeout.ms=50000, DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000}\n"
	if r.stdout != want {
		t.Fatalf("configs describe:\n%s\nwant:\n%s", r.stdout, want)
	}
	r = mustRun(t, "", "configs", "describe", bs, "--entity-type", "group", "--entity-name", "g", "--all")
	if !strings.Contains(r.stdout, "All configs for group g are:\n") ||
		!strings.Contains(r.stdout, "  consumer.heartbeat.interval.ms=6000 sensitive=false synonyms={STATIC_BROKER_CONFIG:group.consumer.heartbeat.interval.ms=6000, DEFAULT_CONFIG:group.consumer.heartbeat.interval.ms=5000}\n") {
		t.Fatalf("configs describe --all:\n%s", r.stdout)
	}
	r = mustRun(t, "", "configs", "describe", bs, "--entity-type", "groups", "--entity-name", "g", "-o", "json")
	var out struct {
		Resources []configResourceJSON `json:"resources"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Resources) != 1 || out.Resources[0].EntityType != "groups" || len(out.Resources[0].Configs) != 1 || out.Resources[0].Configs[0].Source != "GROUP_CONFIG" {
		t.Fatalf("json: %s", r.stdout)
	}

	mustFail(t, "consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms", "",
		"configs", "alter", bs, "--entity-type", "groups", "--entity-name", "g", "--add-config", "consumer.session.timeout.ms=60001")
	mustFail(t, "Unknown group config name: retention.ms", "",
		"configs", "alter", bs, "--entity-type", "groups", "--entity-name", "g", "--add-config", "retention.ms=1")
	mustFail(t, "--entity-default applies to brokers only", "", "configs", "describe", bs, "--entity-type", "groups", "--entity-default")

	mustRun(t, "", "configs", "alter", bs, "--entity-type", "groups", "--entity-name", "g", "--delete-config", "consumer.session.timeout.ms")
	r = mustRun(t, "", "configs", "describe", bs, "--entity-type", "groups", "--entity-name", "g")
	if r.stdout != "Dynamic configs for group g are:\n" {
		t.Fatalf("after --delete-config: %q", r.stdout)
	}
}
