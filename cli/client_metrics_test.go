package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestClientMetrics_AlterDescribeListDelete: `petrel client-metrics` in
// kafka-client-metrics.sh's shape against a node: alter creates and changes a
// subscription, describe prints its configs, list names it, delete removes it, and an
// invalid interval is refused with the broker's message.
func TestClientMetrics_AlterDescribeListDelete(t *testing.T) {
	b := startBroker(t, nil)
	bs := bootstrap(b)

	out := mustRun(t, "", "client-metrics", "alter", bs, "--name", "producers", "--metrics", "org.apache.kafka.producer.", "--interval", "1000", "--match", "client_id=orders-.*")
	if out.stdout != "Altered client metrics config for producers.\n" {
		t.Fatalf("alter printed %q", out.stdout)
	}
	mustRun(t, "", "client-metrics", "alter", bs, "--name", "consumers", "--metrics", "*")
	if got := mustRun(t, "", "client-metrics", "list", bs).stdout; got != "consumers\nproducers\n" {
		t.Fatalf("list printed %q", got)
	}
	var listed struct{ Subscriptions []string }
	if err := json.Unmarshal([]byte(mustRun(t, "", "client-metrics", "list", bs, "-o", "json").stdout), &listed); err != nil ||
		strings.Join(listed.Subscriptions, ",") != "consumers,producers" {
		t.Fatalf("list -o json: %+v %v", listed, err)
	}
	var described struct {
		Subscriptions []struct {
			Name    string
			Configs map[string]string
		}
	}
	if err := json.Unmarshal([]byte(mustRun(t, "", "client-metrics", "describe", bs, "--name", "consumers", "-o", "json").stdout), &described); err != nil ||
		len(described.Subscriptions) != 1 || described.Subscriptions[0].Configs["metrics"] != "*" {
		t.Fatalf("describe -o json: %+v %v", described, err)
	}
	want := lines(
		"Client metrics configs for producers are:",
		"  metrics=org.apache.kafka.producer.",
		"  interval.ms=1000",
		"  match=client_id=orders-.*",
	)
	if got := mustRun(t, "", "client-metrics", "describe", bs, "--name", "producers").stdout; got != want {
		t.Fatalf("describe printed\n%s\nwant\n%s", got, want)
	}
	if got := mustRun(t, "", "client-metrics", "describe", bs).stdout; !strings.Contains(got, "Client metrics configs for consumers are:\n  metrics=*\n") || !strings.Contains(got, "for producers") {
		t.Fatalf("describe of all printed\n%s", got)
	}
	mustFail(t, "interval must be between 100 and 3600000", "", "client-metrics", "alter", bs, "--name", "producers", "--interval", "10")
	mustFail(t, "--name and --generate-name", "", "client-metrics", "alter", bs, "--name", "x", "--generate-name", "--metrics", "*")
	if got := mustRun(t, "", "client-metrics", "alter", bs, "--generate-name", "--metrics", "*").stdout; !strings.HasPrefix(got, "Altered client metrics config for ") {
		t.Fatalf("generate-name printed %q", got)
	}

	if got := mustRun(t, "", "client-metrics", "delete", bs, "--name", "producers").stdout; got != "Deleted client metrics config for producers.\n" {
		t.Fatalf("delete printed %q", got)
	}
	if got := mustRun(t, "", "client-metrics", "describe", bs, "--name", "producers").stdout; got != "The client metric resource producers doesn't exist and doesn't have dynamic config.\n" {
		t.Fatalf("describe after delete printed %q", got)
	}
	if got := mustRun(t, "", "client-metrics", "list", bs).stdout; strings.Contains(got, "producers") {
		t.Fatalf("list after delete printed %q", got)
	}
}
