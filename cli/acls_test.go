package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestACLs_AddListRemove: kafka-acls.sh's flags and listing, literal and prefixed
// patterns, removal, and Kafka's errors for bad flags, missing rights and a cluster
// without an authorizer.
func TestACLs_AddListRemove(t *testing.T) {
	b := startBroker(t, map[string]string{"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users": "User:ANONYMOUS"})
	bs := bootstrap(b)
	r := mustRun(t, "", "acls", "add", bs, "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Describe", "--topic", "orders")
	if !strings.Contains(r.stdout, "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`: \n") ||
		!strings.Contains(r.stdout, " \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW) \n") {
		t.Fatalf("add output:\n%s", r.stdout)
	}
	mustRun(t, "", "acls", "add", bs, "--deny-principal", "User:bob", "--operation", "Write", "--topic", "logs-", "--resource-pattern-type", "prefixed")
	mustRun(t, "", "acls", "add", bs, "--allow-principal", "User:app", "--operation", "All", "--group", "g", "--transactional-id", "tx", "--cluster")
	r = mustRun(t, "", "acls", "list", bs)
	want := lines(
		"Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=logs-, patternType=PREFIXED)`: ",
		" \t(principal=User:bob, host=*, operation=WRITE, permissionType=DENY) ",
		"",
		"Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`: ",
		" \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW) ",
		" \t(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW) ",
		"",
		"Current ACLs for resource `ResourcePattern(resourceType=GROUP, name=g, patternType=LITERAL)`: ",
		" \t(principal=User:app, host=*, operation=ALL, permissionType=ALLOW) ",
		"",
		"Current ACLs for resource `ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL)`: ",
		" \t(principal=User:app, host=*, operation=ALL, permissionType=ALLOW) ",
		"",
		"Current ACLs for resource `ResourcePattern(resourceType=TRANSACTIONAL_ID, name=tx, patternType=LITERAL)`: ",
		" \t(principal=User:app, host=*, operation=ALL, permissionType=ALLOW) ",
		"",
	)
	if r.stdout != want {
		t.Fatalf("list output:\n%s\nwant:\n%s", r.stdout, want)
	}
	r = mustRun(t, "", "acls", "list", bs, "--topic", "logs-x", "--resource-pattern-type", "match")
	if !strings.Contains(r.stdout, "name=logs-, patternType=PREFIXED") || strings.Contains(r.stdout, "orders") {
		t.Fatalf("match listing:\n%s", r.stdout)
	}
	mustRun(t, "", "acls", "remove", bs, "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders")
	r = mustRun(t, "", "acls", "list", bs, "--topic", "orders")
	if strings.Contains(r.stdout, "operation=READ") || !strings.Contains(r.stdout, "operation=DESCRIBE") {
		t.Fatalf("after remove:\n%s", r.stdout)
	}
	mustFail(t, "not of the form Type:Name", "", "acls", "add", bs, "--allow-principal", "alice", "--operation", "Read", "--topic", "t")
	mustFail(t, "unknown --operation", "", "acls", "add", bs, "--allow-principal", "User:a", "--operation", "Fly", "--topic", "t")
	mustFail(t, "--resource-pattern-type must be literal or prefixed", "", "acls", "add", bs, "--allow-principal", "User:a", "--operation", "Read", "--topic", "t", "--resource-pattern-type", "match")
	mustFail(t, "name a resource", "", "acls", "add", bs, "--allow-principal", "User:a", "--operation", "Read")

	// CIDR blocks as hosts (KIP-1276).
	mustRun(t, "", "acls", "add", bs, "--allow-principal", "User:net", "--allow-host", "10.0.0.0/8", "--operation", "Read", "--topic", "cidr")
	r = mustRun(t, "", "acls", "list", bs, "--topic", "cidr")
	if !strings.Contains(r.stdout, "(principal=User:net, host=10.0.0.0/8, operation=READ, permissionType=ALLOW)") {
		t.Fatalf("CIDR listing:\n%s", r.stdout)
	}
	mustFail(t, "not a valid CIDR block", "", "acls", "add", bs, "--allow-principal", "User:net", "--allow-host", "10.0.0.0/33", "--operation", "Read", "--topic", "cidr")

	// bob, authenticated over SASL without rights, is refused.
	locked := startBroker(t, map[string]string{"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users": "User:ANONYMOUS", "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms": "PLAIN", "petrel.raft.security.protocol": "PLAINTEXT",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_bob="bob-secret";`})
	props := filepath.Join(t.TempDir(), "client.properties")
	if err := os.WriteFile(props, []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=bob\nsasl.password=bob-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustFail(t, "CLUSTER_AUTHORIZATION_FAILED", "", "acls", "list", "--bootstrap-server="+locked.ListenerAddr("SASL_PLAINTEXT").String(), "--command-config", props)

	open := bootstrap(startBroker(t, nil))
	const disabled = "the cluster has no authorizer (authorizer.class.name is not set), so ACLs would not be enforced"
	mustFail(t, disabled, "", "acls", "add", open, "--deny-principal", "User:mallory", "--operation", "Read", "--topic", "t")
	mustFail(t, disabled, "", "acls", "list", open)
}

// TestQuotas_AlterDescribe: kafka-configs.sh's entity flags and wording.
func TestQuotas_AlterDescribe(t *testing.T) {
	b := startBroker(t, nil)
	bs := bootstrap(b)
	r := mustRun(t, "", "quotas", "alter", bs, "--entity-type", "clients", "--entity-name", "app", "--add-config", "producer_byte_rate=1048576")
	if r.stdout != "Completed updating config for entity: client-id 'app'.\n" {
		t.Fatalf("alter output %q", r.stdout)
	}
	mustRun(t, "", "quotas", "alter", bs, "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients", "--entity-name", "app",
		"--add-config", "consumer_byte_rate=2048,request_percentage=50")
	mustRun(t, "", "quotas", "alter", bs, "--entity-type", "users", "--user-defaults", "--add-config", "producer_byte_rate=10")
	r = mustRun(t, "", "quotas", "describe", bs)
	want := lines(
		"Quota configs for client-id 'app' are producer_byte_rate=1048576.0",
		"Quota configs for the default user-principal are producer_byte_rate=10.0",
		"Quota configs for user-principal 'alice', client-id 'app' are consumer_byte_rate=2048.0, request_percentage=50.0",
	)
	if r.stdout != want {
		t.Fatalf("describe output:\n%s\nwant:\n%s", r.stdout, want)
	}
	r = mustRun(t, "", "quotas", "describe", bs, "--entity-type", "clients", "--entity-name", "app")
	if r.stdout != "Quota configs for client-id 'app' are producer_byte_rate=1048576.0\n" {
		t.Fatalf("strict describe output %q", r.stdout)
	}
	mustRun(t, "", "quotas", "alter", bs, "--entity-type", "clients", "--entity-name", "app", "--delete-config", "producer_byte_rate")
	r = mustRun(t, "", "quotas", "describe", bs, "--entity-type", "clients", "--entity-name", "app")
	if r.stdout != "" {
		t.Fatalf("after delete: %q", r.stdout)
	}
	mustFail(t, "INVALID_REQUEST", "", "quotas", "alter", bs, "--entity-type", "clients", "--entity-name", "app", "--add-config", "producer_byte_rate=-1")
	mustFail(t, "INVALID_REQUEST", "", "quotas", "alter", bs, "--entity-type", "clients", "--entity-name", "app", "--add-config", "bogus=1")
	mustFail(t, "--entity-type must be users or clients", "", "quotas", "describe", bs, "--entity-type", "topics", "--entity-name", "t")
}
