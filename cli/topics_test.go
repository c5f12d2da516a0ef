package cli

import (
	"fmt"
	"strings"
	"testing"
)

func TestTopics_CreateListDescribeDelete(t *testing.T) {
	b := startBroker(t, nil)
	bs := bootstrap(b)

	// Flags after the topic name, as with kafka-topics.sh.
	r := mustRun(t, "", "topics", "create", "orders", bs, "--partitions", "3", "--replication-factor", "1",
		"--config", "retention.ms=60000", "--config", "max.message.bytes=2048")
	if r.stdout != "Created topic orders.\n" {
		t.Fatalf("create output %q", r.stdout)
	}
	mustRun(t, "", "topics", "create", bs, "--partitions=1", "audit")

	if r := mustRun(t, "", "topics", "list", bs); r.stdout != "audit\norders\n" {
		t.Fatalf("list output %q", r.stdout)
	}

	ordersID := b.Image().Topic("orders").ID.String()
	auditID := b.Image().Topic("audit").ID.String()
	wantOrders := fmt.Sprintf("Topic: orders\tTopicId: %s\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: max.message.bytes=2048,retention.ms=60000\n", ordersID) +
		"\tTopic: orders\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0\tElr: \tLastKnownElr: \n" +
		"\tTopic: orders\tPartition: 1\tLeader: 0\tReplicas: 0\tIsr: 0\tElr: \tLastKnownElr: \n" +
		"\tTopic: orders\tPartition: 2\tLeader: 0\tReplicas: 0\tIsr: 0\tElr: \tLastKnownElr: \n"
	wantAudit := fmt.Sprintf("Topic: audit\tTopicId: %s\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: \n", auditID) +
		"\tTopic: audit\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0\tElr: \tLastKnownElr: \n"
	if r := mustRun(t, "", "topics", "describe", bs, "orders"); r.stdout != wantOrders {
		t.Fatalf("describe orders:\n got %q\nwant %q", r.stdout, wantOrders)
	}
	if r := mustRun(t, "", "topics", "describe", bs); r.stdout != wantAudit+wantOrders {
		t.Fatalf("describe all:\n got %q\nwant %q", r.stdout, wantAudit+wantOrders)
	}
	if r := mustRun(t, "", "topics", "describe", bs, "orders", "audit", "orders"); r.stdout != wantOrders+wantAudit {
		t.Fatalf("describe orders audit: order of the arguments, duplicates once:\n got %q", r.stdout)
	}

	if r := mustRun(t, "", "topics", "delete", bs, "orders"); r.stdout != "Deleted topic orders.\n" {
		t.Fatalf("delete output %q", r.stdout)
	}
	if r := mustRun(t, "", "topics", "list", bs); r.stdout != "audit\n" {
		t.Fatalf("list after delete %q", r.stdout)
	}
	mustFail(t, `topic "orders" does not exist`, "", "topics", "describe", bs, "orders")
	mustFail(t, `topics "nope", "orders" do not exist`, "", "topics", "describe", bs, "nope", "audit", "orders")
	mustFail(t, `topic "orders" does not exist`, "", "topics", "delete", bs, "orders")
	mustRun(t, "", "topics", "delete", bs, "--if-exists", "orders")
}

func TestTopics_CreateErrors(t *testing.T) {
	b := startBroker(t, nil)
	bs := bootstrap(b)
	mustRun(t, "", "topics", "create", bs, "t")
	mustFail(t, "TOPIC_ALREADY_EXISTS", "", "topics", "create", bs, "t")
	mustRun(t, "", "topics", "create", bs, "--if-not-exists", "t")
	mustFail(t, `bad --config "retention.ms": want key=value`, "", "topics", "create", bs, "--config", "retention.ms", "u")
	mustFail(t, "INVALID_CONFIG", "", "topics", "create", bs, "--config", "no.such.config=1", "u")
	mustFail(t, "--partitions must be positive", "", "topics", "create", bs, "--partitions", "0", "u")
	mustFail(t, "takes exactly one TOPIC (or --topic), got 0", "", "topics", "create", bs)
	mustFail(t, "takes exactly one TOPIC (or --topic), got 2", "", "topics", "create", bs, "u", "v")
	mustFail(t, "flag provided but not defined: --no-such-flag", "", "topics", "create", bs, "u", "--no-such-flag")
	mustFail(t, "INVALID_TOPIC_EXCEPTION", "", "topics", "create", bs, "bad/name")
	if r := mustRun(t, "", "topics", "list", bs); r.stdout != "t\n" {
		t.Fatalf("failed creates left topics behind: %q", r.stdout)
	}
}

func TestTopics_DescribeShowsOnlyNonDefaultConfigs(t *testing.T) {
	// A broker-level setting is not a Kafka default: kafka-topics.sh shows it too
	// (source STATIC_BROKER_CONFIG), as it shows segment.bytes=1073741824 for a stock
	// server.properties.
	b := startBroker(t, map[string]string{"log.segment.bytes": "1073741824"})
	bs := bootstrap(b)
	mustRun(t, "", "topics", "create", bs, "--config", "cleanup.policy=delete", "t")
	r := mustRun(t, "", "topics", "describe", bs, "t")
	first := strings.SplitN(r.stdout, "\n", 2)[0]
	if !strings.HasSuffix(first, "\tConfigs: cleanup.policy=delete,segment.bytes=1073741824") {
		t.Fatalf("summary line %q", first)
	}
}

// Names that differ only in '.' versus '_' collide, as in Kafka: kafka-topics.sh's
// warning on create, INVALID_TOPIC_EXCEPTION for the second one.
func TestTopics_CreateRefusesCollidingName(t *testing.T) {
	b := startBroker(t, nil)
	bs := bootstrap(b)
	r := mustRun(t, "", "topics", "create", bs, "a.b_c")
	if !strings.Contains(r.stderr, "WARNING: Due to limitations in metric names") {
		t.Fatalf("no collision warning: %q", r.stderr)
	}
	mustFail(t, "INVALID_TOPIC_EXCEPTION", "", "topics", "create", bs, "a_b.c")
}
