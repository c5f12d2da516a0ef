package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestClusterOpsCommands runs topics alter, configs describe|alter, leader-election,
// delete-records and log-dirs describe against one broker, checking Kafka's output
// formats and clear errors.
func TestClusterOpsCommands(t *testing.T) {
	b := startBroker(t, nil)
	bs := bootstrap(b)
	mustRun(t, "", "topics", "create", bs, "--partitions", "1", "ops")

	// topics alter
	if r := mustRun(t, "", "topics", "alter", bs, "ops", "--partitions", "3"); r.stdout != "" {
		t.Fatalf("topics alter printed %q, want nothing (as kafka-topics.sh)", r.stdout)
	}
	if r := mustRun(t, "", "topics", "describe", bs, "ops"); !strings.Contains(r.stdout, "PartitionCount: 3") {
		t.Fatalf("describe after alter: %q", r.stdout)
	}
	mustFail(t, "INVALID_PARTITIONS", "", "topics", "alter", bs, "ops", "--partitions", "2")
	mustFail(t, `topic "nope" does not exist`, "", "topics", "alter", bs, "nope", "--partitions", "2")
	mustFail(t, "--replica-assignment", "", "topics", "alter", bs, "ops", "--partitions", "4", "--replica-assignment", "a:b")

	// configs
	r := mustRun(t, "", "configs", "alter", bs, "--entity-type", "topics", "--entity-name", "ops", "--add-config", "retention.ms=1000,cleanup.policy=[delete]")
	if r.stdout != "Completed updating config for topic ops.\n" {
		t.Fatalf("configs alter: %q", r.stdout)
	}
	r = mustRun(t, "", "configs", "describe", bs, "--entity-type", "topics", "--entity-name", "ops")
	want := "Dynamic configs for topic ops are:\n" +
		"  cleanup.policy=delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=delete, DEFAULT_CONFIG:log.cleanup.policy=delete}\n" +
		"  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000, DEFAULT_CONFIG:log.retention.hours=168}\n"
	if r.stdout != want {
		t.Fatalf("configs describe:\n%s\nwant:\n%s", r.stdout, want)
	}
	mustRun(t, "", "configs", "alter", bs, "--entity-type", "topics", "--entity-name", "ops", "--delete-config", "retention.ms")
	if r := mustRun(t, "", "configs", "describe", bs, "--entity-type", "topics", "--entity-name", "ops"); strings.Contains(r.stdout, "retention.ms") {
		t.Fatalf("retention.ms still listed after --delete-config: %q", r.stdout)
	}
	r = mustRun(t, "", "configs", "alter", bs, "--entity-type", "brokers", "--entity-default", "--add-config", "log.retention.ms=5000")
	if r.stdout != "Completed updating default config for brokers in the cluster.\n" {
		t.Fatalf("configs alter default: %q", r.stdout)
	}
	r = mustRun(t, "", "configs", "describe", bs, "--entity-type", "brokers", "--entity-default")
	if !strings.HasPrefix(r.stdout, "Default configs for brokers in the cluster are:\n  log.retention.ms=5000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=5000") {
		t.Fatalf("configs describe default: %q", r.stdout)
	}
	mustRun(t, "", "configs", "alter", bs, "--entity-type", "brokers", "--entity-name", "0", "--add-config", "log.retention.ms=7000")
	r = mustRun(t, "", "configs", "describe", bs, "--entity-type", "brokers", "--entity-name", "0")
	if !strings.Contains(r.stdout, "Dynamic configs for broker 0 are:\n  log.retention.ms=7000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=7000, DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=5000") {
		t.Fatalf("configs describe broker 0: %q", r.stdout)
	}
	if r := mustRun(t, "", "configs", "describe", bs, "--entity-type", "topics", "--entity-name", "ops", "--all"); !strings.Contains(r.stdout, "retention.ms=7000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=7000") {
		t.Fatalf("a topic's retention.ms after the broker's dynamic value: %q", r.stdout)
	}
	mustFail(t, "INVALID_CONFIG", "", "configs", "alter", bs, "--entity-type", "topics", "--entity-name", "ops", "--add-config", "no.such=1")
	mustFail(t, "dynamically", "", "configs", "alter", bs, "--entity-type", "brokers", "--entity-default", "--add-config", "num.partitions=2")
	mustFail(t, "--entity-type must be topics, brokers, groups or users", "", "configs", "describe", bs, "--entity-type", "clients")
	mustFail(t, "--add-config or --delete-config", "", "configs", "alter", bs, "--entity-type", "topics", "--entity-name", "ops")

	// leader-election: one broker leads everything already.
	r = mustRun(t, "", "leader-election", bs, "--election-type", "PREFERRED", "--topic", "ops")
	if r.stdout != "Valid replica already elected for partitions ops-0, ops-1, ops-2\n" {
		t.Fatalf("leader-election --topic: %q", r.stdout)
	}
	if r := mustRun(t, "", "leader-election", bs, "--election-type", "preferred", "--all-topic-partitions"); r.stdout != "" {
		t.Fatalf("leader-election --all-topic-partitions with nothing to do printed %q", r.stdout)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "elect.json")
	if err := os.WriteFile(file, []byte(`{"partitions": [{"topic": "ops", "partition": 1}, {"topic": "nope", "partition": 0}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r = mustFail(t, "1 replica(s) could not be elected", "", "leader-election", bs, "--election-type", "UNCLEAN", "--path-to-json-file", file)
	if !strings.Contains(r.stdout, "Valid replica already elected for partitions ops-1\n") ||
		!strings.Contains(r.stdout, "Error completing leader election (UNCLEAN) for partition: nope-0: UNKNOWN_TOPIC_OR_PARTITION") {
		t.Fatalf("leader-election from a file: %q", r.stdout)
	}
	mustFail(t, "exactly one of", "", "leader-election", bs, "--election-type", "PREFERRED", "--all-topic-partitions", "--topic", "ops")
	mustFail(t, "--partition needs --topic", "", "leader-election", bs, "--election-type", "PREFERRED", "--all-topic-partitions", "--partition", "1")
	mustFail(t, "PREFERRED or UNCLEAN", "", "leader-election", bs, "--election-type", "RANDOM", "--all-topic-partitions")

	// delete-records and log-dirs
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 5 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "ops", Partition: 0, Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	file = filepath.Join(dir, "delete.json")
	if err := os.WriteFile(file, []byte(`{"partitions": [{"topic": "ops", "partition": 0, "offset": 3}], "version": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r = mustRun(t, "", "delete-records", bs, "--offset-json-file", file)
	if r.stdout != "Executing records delete operation\nRecords delete operation completed:\npartition: ops-0\tlow_watermark: 3\n" {
		t.Fatalf("delete-records: %q", r.stdout)
	}
	offs, err := kadm.NewClient(cl).ListStartOffsets(ctx, "ops")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup("ops", 0); o.Offset != 3 {
		t.Fatalf("earliest offset after delete-records: %d, want 3", o.Offset)
	}
	if err := os.WriteFile(file, []byte(`{"partitions": [{"topic": "ops", "partition": 0, "offset": 99}], "version": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r = mustFail(t, "could not be deleted", "", "delete-records", bs, "--offset-json-file", file)
	if !strings.Contains(r.stdout, "partition: ops-0\terror: OFFSET_OUT_OF_RANGE") {
		t.Fatalf("delete-records past the high watermark: %q", r.stdout)
	}
	r = mustRun(t, "", "log-dirs", "describe", bs, "--topic-list", "ops")
	if !strings.HasPrefix(r.stdout, "Querying brokers for log directories information\nReceived log directory information from brokers 0\n{\"brokers\":[{\"broker\":0,\"logDirs\":[{\"logDir\":") ||
		!strings.Contains(r.stdout, `{"partition":"ops-0","size":`) || !strings.Contains(r.stdout, `"offsetLag":0,"isFuture":false}`) {
		t.Fatalf("log-dirs describe: %q", r.stdout)
	}
}

// TestDeleteRecordsTimeoutDefault: delete-records waits 30 s by default (Kafka's admin
// request.timeout.ms), longer than a follower's fencing takes, while other commands
// keep 10 s.
func TestDeleteRecordsTimeoutDefault(t *testing.T) {
	if r := run(t, "", "delete-records", "--help"); !strings.Contains(r.stdout, "(default: 30s)") {
		t.Fatalf("delete-records --help does not show a 30s --timeout default:\n%s", r.stdout)
	}
	if r := run(t, "", "topics", "list", "--help"); !strings.Contains(r.stdout, "(default: 10s)") {
		t.Fatalf("topics list --help does not show a 10s --timeout default:\n%s", r.stdout)
	}
}
