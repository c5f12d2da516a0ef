package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// mustJSON runs a command that must exit 0 and decodes its stdout into v (unknown
// fields refused, so that the documented format is what the command prints).
func mustJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	r := mustRun(t, "", args...)
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("petrel %s: stdout is not the documented JSON: %v\n%s", strings.Join(args, " "), err, r.stdout)
	}
}

// TestJSONOutput runs every list and describe command with -o json (or --output json)
// and parses the answer back into the format docs/operations.md documents.
func TestJSONOutput(t *testing.T) {
	b := startBroker(t, map[string]string{"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users": "User:ANONYMOUS"})
	bs := bootstrap(b)
	mustRun(t, "", "topics", "create", bs, "orders", "--partitions", "2", "--config", "retention.ms=3600000")
	mustRun(t, "", "produce", bs, "orders", "--partition", "1", "--key-separator", ":")
	mustRun(t, "a:1\nb:2\n", "produce", bs, "orders", "--partition", "1", "--key-separator", ":")
	mustRun(t, "", "consume", bs, "orders", "--group", "billing", "--from-beginning", "--max-messages", "2")
	mustRun(t, "", "acls", "add", bs, "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders")
	mustRun(t, "", "quotas", "alter", bs, "--entity-type", "clients", "--entity-name", "app", "--add-config", "producer_byte_rate=1024")
	mustRun(t, "", "users", "scram", "set", bs, "alice", "--password", "alice-secret", "--iterations", "8192")

	var topics struct{ Topics []topicListing }
	mustJSON(t, &topics, "topics", "list", bs, "-o", "json", "--exclude-internal")
	if len(topics.Topics) != 1 || topics.Topics[0].Name != "orders" || topics.Topics[0].Partitions != 2 || len(topics.Topics[0].TopicID) != 22 {
		t.Errorf("topics list: %+v", topics)
	}

	var described struct{ Topics []describedTopic }
	mustJSON(t, &described, "topics", "describe", bs, "--topic", "orders", "--output", "json")
	if d := described.Topics; len(d) != 1 || d[0].PartitionCount != 2 || d[0].ReplicationFactor != 1 ||
		derefString(d[0].Configs["retention.ms"]) != "3600000" || d[0].MinInSyncReplicas == nil || *d[0].MinInSyncReplicas != 1 ||
		len(d[0].Partitions) != 2 || d[0].Partitions[1].Leader != 0 || d[0].Partitions[1].UnderReplicated || !d[0].Partitions[1].AtMinISR {
		t.Errorf("topics describe: %+v", described)
	}

	var offsets struct{ Partitions []partitionOffsets }
	mustJSON(t, &offsets, "topics", "offsets", bs, "orders", "-o", "json")
	if p := offsets.Partitions; len(p) != 2 || *p[1].LogStartOffset != 0 || *p[1].HighWatermark != 2 || *p[1].LastStableOffset != 2 || p[1].Error != nil {
		t.Errorf("topics offsets: %+v", offsets)
	}

	var groups struct{ Groups []listedGroup }
	mustJSON(t, &groups, "groups", "list", bs, "-o", "json")
	if len(groups.Groups) != 1 || groups.Groups[0].Group != "billing" || groups.Groups[0].State != "Empty" {
		t.Errorf("groups list: %+v", groups)
	}
	var group struct{ Groups []describedGroupJSON }
	mustJSON(t, &group, "groups", "describe", bs, "billing", "-o", "json")
	if g := group.Groups; len(g) != 1 || g[0].State != "Empty" || len(g[0].Offsets) == 0 || g[0].TotalLag != 0 {
		t.Errorf("groups describe: %+v", group)
	}

	var cluster clusterDescription
	mustJSON(t, &cluster, "cluster", "describe", bs, "-o", "json")
	if cluster.ClusterID == "" || cluster.ControllerID != 0 || len(cluster.Brokers) != 1 || cluster.Quorum == nil || cluster.Quorum.LeaderID != 0 {
		t.Errorf("cluster describe: %+v", cluster)
	}

	var configs struct{ Resources []configResourceJSON }
	mustJSON(t, &configs, "configs", "describe", bs, "--topic", "orders", "-o", "json")
	if r := configs.Resources; len(r) != 1 || r[0].EntityType != "topics" || derefString(r[0].EntityName) != "orders" ||
		len(r[0].Configs) != 1 || r[0].Configs[0].Name != "retention.ms" || r[0].Configs[0].Source != "DYNAMIC_TOPIC_CONFIG" {
		t.Errorf("configs describe: %+v", configs)
	}

	var producers struct {
		Topic     string
		Partition int
		Producers []struct {
			ProducerID                    int64 `json:"producer_id"`
			ProducerEpoch                 int16 `json:"producer_epoch"`
			CoordinatorEpoch              int32 `json:"coordinator_epoch"`
			LastSequence                  int32 `json:"last_sequence"`
			LastTimestamp                 int64 `json:"last_timestamp"`
			CurrentTransactionStartOffset int64 `json:"current_transaction_start_offset"`
		}
	}
	mustJSON(t, &producers, "producers", "describe", bs, "--topic", "orders", "--partition", "1", "-o", "json")
	if len(producers.Producers) != 1 || producers.Producers[0].LastSequence != 1 {
		t.Errorf("producers describe: %+v", producers)
	}

	var txns struct {
		Transactions []struct {
			TransactionalID string `json:"transactional_id"`
			Coordinator     int32
			ProducerID      int64 `json:"producer_id"`
			State           string
		}
	}
	mustJSON(t, &txns, "transactions", "list", bs, "-o", "json")
	var hanging struct {
		Hanging []json.RawMessage
	}
	mustJSON(t, &hanging, "transactions", "find-hanging", bs, "--topic", "orders", "-o", "json")
	if txns.Transactions == nil || hanging.Hanging == nil {
		t.Errorf("transactions: %+v %+v (want empty lists, not null)", txns, hanging)
	}

	var acls struct {
		ACLs []struct {
			ResourceType string `json:"resource_type"`
			ResourceName string `json:"resource_name"`
			PatternType  string `json:"pattern_type"`
			Principal    string
			Host         string
			Operation    string
			Permission   string
		}
	}
	mustJSON(t, &acls, "acls", "list", bs, "-o", "json")
	if len(acls.ACLs) != 1 || acls.ACLs[0].Principal != "User:alice" || acls.ACLs[0].Operation != "READ" || acls.ACLs[0].ResourceType != "TOPIC" {
		t.Errorf("acls list: %+v", acls)
	}

	var quotas struct {
		Quotas []struct {
			Entity map[string]*string
			Values map[string]float64
		}
	}
	mustJSON(t, &quotas, "quotas", "describe", bs, "-o", "json")
	if len(quotas.Quotas) != 1 || derefString(quotas.Quotas[0].Entity["client-id"]) != "app" || quotas.Quotas[0].Values["producer_byte_rate"] != 1024 {
		t.Errorf("quotas describe: %+v", quotas)
	}

	var users struct {
		Users []struct {
			User        string
			Credentials []struct {
				Mechanism  string
				Iterations int32
			}
		}
	}
	mustJSON(t, &users, "users", "scram", "list", bs, "-o", "json")
	if len(users.Users) != 1 || users.Users[0].User != "alice" || users.Users[0].Credentials[0].Iterations != 8192 {
		t.Errorf("users scram list: %+v", users)
	}

	var dirs logDirsJSON
	mustJSON(t, &dirs, "log-dirs", "describe", bs, "--topic-list", "orders", "-o", "json")
	if len(dirs.Brokers) != 1 || len(dirs.Brokers[0].LogDirs) != 1 || len(dirs.Brokers[0].LogDirs[0].Partitions) != 2 {
		t.Errorf("log-dirs describe: %+v", dirs)
	}

	var version buildVersion
	mustJSON(t, &version, "version", "-o", "json")
	if version != readBuildVersion() {
		t.Errorf("version: %+v", version)
	}
}

// TestTopicsOffsets: each partition's log start offset, high watermark and last stable
// offset (an open transaction holds the LSO back), and kafka-get-offsets.sh's --time.
func TestTopicsOffsets(t *testing.T) {
	b := startBroker(t, nil)
	bs := bootstrap(b)
	mustRun(t, "", "topics", "create", bs, "--partitions", "2", "offs")
	before := time.Now().UnixMilli()
	mustRun(t, "a\nb\nc\nd\n", "produce", bs, "offs", "--partition", "0")

	// An open transaction on partition 1: its records raise the high watermark, not the
	// last stable offset.
	tx, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.TransactionalID("offs-tx"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := tx.ProduceSync(ctx, &kgo.Record{Topic: "offs", Partition: 1, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	r := mustRun(t, "", "topics", "offsets", bs, "offs")
	want := "TOPIC  PARTITION  LEADER  LOG-START-OFFSET  HIGH-WATERMARK  LAST-STABLE-OFFSET\n" +
		"offs   0          0       0                 4               4\n" +
		"offs   1          0       0                 1               0\n"
	if r.stdout != want {
		t.Fatalf("topics offsets:\n%s\nwant:\n%s", r.stdout, want)
	}
	if err := tx.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}

	// delete-records moves the log start of partition 0.
	file := filepath.Join(t.TempDir(), "del.json")
	if err := os.WriteFile(file, []byte(`{"partitions":[{"topic":"offs","partition":0,"offset":2}],"version":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "", "delete-records", bs, "--offset-json-file", file)
	for _, tc := range []struct {
		time, want string
	}{
		{"-2", "offs:0:2\noffs:1:0\n"},
		{"earliest", "offs:0:2\noffs:1:0\n"},
		{"-1", "offs:0:4\noffs:1:2\n"}, // the abort marker is an offset too
		{"latest", "offs:0:4\noffs:1:2\n"},
		{"0", "offs:0:2\noffs:1:0\n"}, // the first offset at or after the epoch: the log start
	} {
		if r := mustRun(t, "", "topics", "offsets", bs, "--topic", "offs", "--time", tc.time); r.stdout != tc.want {
			t.Errorf("--time %s: %q, want %q", tc.time, r.stdout, tc.want)
		}
	}
	r = mustRun(t, "", "topics", "offsets", bs, "--topic", "offs", "--partitions", "0", "--time", "-3")
	if r.stdout != "offs:0:2\n" && r.stdout != "offs:0:3\n" { // records written in the same millisecond share the max
		t.Errorf("--time -3 (max timestamp): %q", r.stdout)
	}
	var timed struct {
		Time       int64
		Partitions []timedOffset
	}
	mustJSON(t, &timed, "topics", "offsets", bs, "offs", "--partitions", "0", "--time", "0", "-o", "json")
	if len(timed.Partitions) != 1 || timed.Partitions[0].Offset == nil || *timed.Partitions[0].Offset != 2 ||
		timed.Partitions[0].Timestamp == nil || *timed.Partitions[0].Timestamp < before {
		t.Errorf("--time 0 -o json: %+v", timed)
	}
	mustFail(t, `bad --time "yesterday"`, "", "topics", "offsets", bs, "offs", "--time", "yesterday")
	mustFail(t, "no partition 7 in offs", "", "topics", "offsets", bs, "offs", "--partitions", "7")
	mustFail(t, `topic "nope" does not exist`, "", "topics", "offsets", bs, "nope")
}
