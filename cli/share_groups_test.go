package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The share-groups tables in kafka-share-groups.sh's columns: list with --state,
// describe's offsets (with LEADER-EPOCH under --verbose, "-" for what is unknown),
// members (assignment "topic:0,1;other:2") and state.
func TestShareGroups_Tables(t *testing.T) {
	listed := []kadm.ListedGroup{{Group: "sg", State: "Stable", GroupType: "share"}, {Group: "a-much-longer-group-id", State: "Empty", GroupType: "share"}}
	if got := formatShareGroupList(listed, false); got != "sg\na-much-longer-group-id\n" {
		t.Fatalf("list %q", got)
	}
	want := "GROUP                  STATE\nsg                     Stable\na-much-longer-group-id Empty\n"
	if got := formatShareGroupList(listed, true); got != want {
		t.Fatalf("list --state\n%q\nwant\n%q", got, want)
	}

	offsets := kadm.ShareOffsets{"orders": {
		1: {Topic: "orders", Partition: 1, StartOffset: -1, LeaderEpoch: -1, Lag: -1},
		0: {Topic: "orders", Partition: 0, StartOffset: 4, LeaderEpoch: 2, Lag: 6},
	}}
	var out strings.Builder
	writeShareGroupOffsets(&out, "sg", offsets, false)
	want = "\nGROUP           TOPIC           PARTITION  START-OFFSET  LAG\n" +
		"sg              orders          0          4             6\n" +
		"sg              orders          1          -             -\n"
	if out.String() != want {
		t.Fatalf("offsets\n%q\nwant\n%q", out.String(), want)
	}
	out.Reset()
	writeShareGroupOffsets(&out, "sg", offsets, true)
	if !strings.Contains(out.String(), "PARTITION  LEADER-EPOCH  START-OFFSET  LAG\n") || !strings.Contains(out.String(), "0          2             4             6\n") {
		t.Fatalf("verbose offsets %q", out.String())
	}

	d := kadm.DescribedShareGroup{GroupID: "sg", GroupState: "Stable", GroupEpoch: 3, AssignmentEpoch: 3,
		Coordinator: kadm.BrokerDetail{NodeID: 1, Host: "localhost", Port: 9092},
		Members: []kadm.ShareGroupMember{
			{MemberID: "m2", ClientID: "c", ClientHost: "/127.0.0.1", MemberEpoch: 3, Assignment: kadm.TopicsSet{"orders": {0: {}, 1: {}}, "b": {2: {}}}},
			{MemberID: "m1", ClientID: "c", ClientHost: "/127.0.0.1", MemberEpoch: 2, Assignment: kadm.TopicsSet{"orders": {0: {}}}},
		}}
	out.Reset()
	writeShareGroupMembers(&out, d, true)
	rows := parseGroupTable(t, out.String())
	if len(rows) != 2 || rows[0]["CONSUMER-ID"] != "m1" || rows[1]["ASSIGNMENT"] != "b:2;orders:0,1" || rows[1]["#PARTITIONS"] != "3" || rows[1]["MEMBER-EPOCH"] != "3" {
		t.Fatalf("members %q", out.String())
	}
	out.Reset()
	writeShareGroupState(&out, d, false)
	want = "\nGROUP           COORDINATOR (ID)          STATE           #MEMBERS\n" +
		"sg              localhost:9092  (1)       Stable          2\n"
	if out.String() != want {
		t.Fatalf("state\n%q\nwant\n%q", out.String(), want)
	}

	table, failed := formatShareOffsetsDeleted([]string{"t", "nope"}, kadm.DeleteShareGroupOffsetsResponses{"t": nil, "nope": kerr.UnknownTopicOrPartition})
	if !strings.Contains(table, "nope            Error: UNKNOWN_TOPIC_OR_PARTITION") || !strings.Contains(table, "t               Successful") || len(failed) != 1 {
		t.Fatalf("deleted %q %v", table, failed)
	}
}

// --by-duration takes Java's ISO-8601 durations; --state Kafka's share group states.
func TestShareGroups_ParseArgs(t *testing.T) {
	for in, want := range map[string]time.Duration{"PT1H": time.Hour, "P1DT30M": 24*time.Hour + 30*time.Minute, "PT0.5S": 500 * time.Millisecond, "pt2m": 2 * time.Minute} {
		if got, err := parseISODuration(in); err != nil || got != want {
			t.Errorf("%s: %v %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "P", "PT", "1H", "PT1X", "-PT1H"} {
		if _, err := parseISODuration(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if got, err := parseShareGroupStates("stable, EMPTY"); err != nil || strings.Join(got, ",") != "Stable,Empty" {
		t.Fatalf("states %v %v", got, err)
	}
	if _, err := parseShareGroupStates("PreparingRebalance"); err == nil || !strings.Contains(err.Error(), "Valid states are: Dead, Empty, Stable") {
		t.Fatalf("bad state: %v", err)
	}
}

// share-groups against a broker and its share coordinator: reset
// is a dry run unless --execute and then sets the start offsets (to-latest, to-earliest,
// by-duration, --all-topics), describe shows them with their lag, the group is listed,
// delete --delete-offsets deletes a topic's state and reports an unknown topic, delete
// removes the empty group, and usage errors are one line.
func TestShareGroups_ResetDescribeDeleteOffsets(t *testing.T) {
	b := startBroker(t, nil)
	bs := bootstrap(b)
	mustRun(t, "", "topics", "create", bs, "--partitions", "2", "orders")
	produceEach(t, b.Addr().String(), "orders", 2, 5)

	mustFail(t, "share group 'sg' does not exist", "", "share-groups", "describe", bs, "sg")
	r := mustRun(t, "", "share-groups", "reset-offsets", bs, "--group", "sg", "--topic", "orders", "--to-latest")
	if rows := parseGroupTable(t, r.stdout); len(rows) != 2 || rows[0]["NEW-OFFSET"] != "5" || rows[1]["GROUP"] != "sg" {
		t.Fatalf("dry run %q", r.stdout)
	}
	mustFail(t, "share group 'sg' does not exist", "", "share-groups", "describe", bs, "sg")

	mustRun(t, "", "share-groups", "reset-offsets", bs, "--group", "sg", "--topic", "orders:1", "--to-latest", "--execute")
	r = mustRun(t, "", "share-groups", "describe", bs, "sg")
	rows := parseGroupTable(t, r.stdout)
	if len(rows) != 1 || rows[0]["PARTITION"] != "1" || rows[0]["START-OFFSET"] != "5" || rows[0]["LAG"] != "0" {
		t.Fatalf("describe after reset to latest %q", r.stdout)
	}
	mustRun(t, "", "share-groups", "reset-offsets", bs, "sg", "--topic", "orders", "--to-earliest", "--execute")
	mustRun(t, "", "share-groups", "reset-offsets", bs, "sg", "--all-topics", "--by-duration", "PT1H", "--execute")
	r = mustRun(t, "", "share-groups", "describe", bs, "--group", "sg", "--verbose")
	rows = parseGroupTable(t, r.stdout)
	if len(rows) != 2 || offsetsByPartition(rows, "START-OFFSET")["0"] != "0" || offsetsByPartition(rows, "LAG")["1"] != "5" || rows[0]["LEADER-EPOCH"] == "" {
		t.Fatalf("describe --verbose after reset to earliest %q", r.stdout)
	}
	var js struct {
		Groups []struct {
			Group   string `json:"group"`
			Offsets []struct {
				Partition   int32 `json:"partition"`
				StartOffset int64 `json:"start_offset"`
			} `json:"offsets"`
		} `json:"groups"`
	}
	r = mustRun(t, "", "share-groups", "describe", bs, "sg", "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &js); err != nil || len(js.Groups) != 1 || len(js.Groups[0].Offsets) != 2 {
		t.Fatalf("describe -o json %q: %v", r.stdout, err)
	}
	if r := mustRun(t, "", "share-groups", "list", bs, "--state", "all"); !strings.Contains(r.stdout, "sg ") || !strings.Contains(r.stdout, "Empty") {
		t.Fatalf("list --state %q", r.stdout)
	}
	// kafka-share-groups.sh's spelling: the action as a flag.
	if r := mustRun(t, "", "share-groups", bs, "--describe", "--group", "sg", "--offsets"); len(parseGroupTable(t, r.stdout)) != 2 {
		t.Fatalf("--describe %q", r.stdout)
	}

	r = run(t, "", "share-groups", bs, "--delete-offsets", "--group", "sg", "--topic", "orders", "--topic", "nope")
	if r.code != 1 || !strings.Contains(r.stdout, "orders          Successful") || !strings.Contains(r.stdout, "nope            Error: UNKNOWN_TOPIC_OR_PARTITION") {
		t.Fatalf("delete --delete-offsets: %d %q %q", r.code, r.stdout, r.stderr)
	}
	assertCleanError(t, r.stderr, "deleting the offsets of share group 'sg' failed for nope")
	if rows := parseGroupTable(t, mustRun(t, "", "share-groups", "describe", bs, "sg").stdout); len(rows) != 0 {
		t.Fatalf("describe after delete-offsets %v", rows)
	}

	mustFail(t, "reset-offsets needs one of --to-earliest", "", "share-groups", "reset-offsets", bs, "sg", "--topic", "orders")
	mustFail(t, "--execute and --dry-run cannot be used together", "", "share-groups", "reset-offsets", bs, "sg", "--topic", "orders", "--to-latest", "--execute", "--dry-run")
	mustFail(t, "bad --by-duration", "", "share-groups", "reset-offsets", bs, "sg", "--topic", "orders", "--by-duration", "1h")
	mustFail(t, "needs --topic", "", "share-groups", "delete-offsets", bs, "sg")
	mustFail(t, "it needs --delete-offsets", "", "share-groups", "delete", bs, "sg", "--topic", "orders")
	mustFail(t, "Group 'nope' is not a share group.", "", "share-groups", "delete", bs, "nope")
	if r := mustRun(t, "", "share-groups", "delete", bs, "sg"); r.stdout != "Deletion of requested share groups ('sg') was successful.\n" {
		t.Fatalf("delete %q", r.stdout)
	}
	if r := mustRun(t, "", "share-groups", "list", bs); r.stdout != "" {
		t.Fatalf("list after delete %q", r.stdout)
	}
}
