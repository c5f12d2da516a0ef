package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// commitOffset commits offset at on partition 0 of topic for group, which makes the
// group exist as a classic group (a simple consumer's).
func commitOffset(t *testing.T, addr, group, topic string, at int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: topic, Partition: 0, At: at, LeaderEpoch: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if resp, err := kadm.NewClient(cl).CommitOffsets(ctx, group, offsets); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
}

// `groups list --type` filters by group type and prints Kafka 4's GROUP TYPE [STATE]
// table; `describe --state --verbose` adds the epochs, "-" for a classic group.
func TestGroups_ListTypes(t *testing.T) {
	b := startBroker(t, groupProps)
	bs := bootstrap(b)
	mustRun(t, "", "topics", "create", bs, "--partitions", "2", "orders")
	commitOffset(t, b.Addr().String(), "billing", "orders", 0)

	for _, types := range []string{"classic", "Classic,consumer", "all"} {
		r := mustRun(t, "", "groups", "list", bs, "--type", types)
		if rows := parseGroupTable(t, r.stdout); len(rows) != 1 || rows[0]["GROUP"] != "billing" || rows[0]["TYPE"] != "Classic" {
			t.Fatalf("list --type %s: %q", types, r.stdout)
		}
	}
	if r := mustRun(t, "", "groups", "list", bs, "--type", "consumer"); strings.Contains(r.stdout, "billing") {
		t.Fatalf("list --type consumer lists a classic group: %q", r.stdout)
	}
	r := mustRun(t, "", "groups", "list", bs, "--type", "classic", "--state", "empty")
	if rows := parseGroupTable(t, r.stdout); len(rows) != 1 || rows[0]["TYPE"] != "Classic" || rows[0]["STATE"] != "Empty" {
		t.Fatalf("list --type --state: %q", r.stdout)
	}
	var listed struct{ Groups []listedGroup }
	mustJSON(t, &listed, "groups", "list", bs, "-o", "json")
	if len(listed.Groups) != 1 || listed.Groups[0].Type != "classic" {
		t.Fatalf("list -o json: %+v", listed)
	}
	mustFail(t, `bad --type "share"`, "", "groups", "list", bs, "--type", "share")

	r = mustRun(t, "", "groups", "describe", bs, "billing", "--state", "--verbose")
	if rows := parseGroupTable(t, strings.ReplaceAll(r.stdout, " (", "(")); len(rows) != 1 || rows[0]["STATE"] != "Empty" ||
		rows[0]["GROUP-EPOCH"] != "-" || rows[0]["TARGET-ASSIGNMENT-EPOCH"] != "-" || rows[0]["#MEMBERS"] != "0" {
		t.Fatalf("describe --state --verbose: %q", r.stdout)
	}
	var described struct{ Groups []describedGroupJSON }
	mustJSON(t, &described, "groups", "describe", bs, "billing", "-o", "json")
	if g := described.Groups; len(g) != 1 || g[0].Type != "classic" || g[0].GroupEpoch != nil {
		t.Fatalf("describe -o json: %+v", described)
	}
	mustFail(t, "--verbose needs --members or --state", "", "groups", "describe", bs, "billing", "--verbose")
}

// The members table of a consumer group is Kafka 4's: GROUP-INSTANCE-ID only when a
// member has one, and with --verbose each member's epoch, assignment, the target
// epoch and its target assignment as topic:partitions;topic:partitions.
func TestConsumerGroupMembersFormat(t *testing.T) {
	d := groupView{group: "cg", groupType: groupTypeConsumer, state: "Reconciling", groupEpoch: 3, assignmentEpoch: 3,
		members: []memberView{
			{id: "m1", clientID: "c1", host: "/10.0.0.1", epoch: 2, assignment: map[string][]int32{"b": {1}, "a": {2, 0}},
				target: map[string][]int32{"a": {0, 2}}},
			{id: "m2", clientID: "c2", host: "/10.0.0.2", epoch: 3, assignment: map[string][]int32{}, target: map[string][]int32{"b": {1}}},
		}}
	var w strings.Builder
	writeConsumerGroupMembers(&w, d, true)
	want := "\n" +
		"GROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     CURRENT-EPOCH   CURRENT-ASSIGNMENT   TARGET-EPOCH    TARGET-ASSIGNMENT\n" +
		"cg              m1              /10.0.0.1       c1              3               2               a:0,2;b:1            3               a:0,2\n" +
		"cg              m2              /10.0.0.2       c2              0               3               -                    3               b:1\n"
	if w.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", w.String(), want)
	}
	d.members[1].instanceID = kmsg.StringPtr("i2")
	w.Reset()
	writeConsumerGroupMembers(&w, d, false)
	rows := parseGroupTable(t, w.String())
	if len(rows) != 2 || rows[0]["GROUP-INSTANCE-ID"] != "-" || rows[1]["GROUP-INSTANCE-ID"] != "i2" || rows[0]["#PARTITIONS"] != "3" ||
		rows[0]["CURRENT-EPOCH"] != "" {
		t.Fatalf("without --verbose: %q", w.String())
	}

	w.Reset()
	writeGroupList(&w, []kadm.ListedGroup{{Group: "cg", GroupType: "consumer", State: "Stable"}, {Group: "old", State: "Empty"}}, true, true)
	want = "GROUP                     TYPE                 STATE               \n" +
		"cg                        Consumer             Stable              \n" +
		"old                       Unknown              Empty               \n"
	if w.String() != want {
		t.Fatalf("list: got\n%q\nwant\n%q", w.String(), want)
	}
}

// A consumer group of the KIP-848 protocol (a kgo consumer with ServerSideBalancer)
// through the CLI: listed with type Consumer, its state with the epochs and the
// server-side assignor, its members with their epochs and assignments, its offsets
// with the member owning each partition, and as JSON.
func TestGroups_ConsumerProtocol(t *testing.T) {
	b := startBroker(t, groupProps)
	bs := bootstrap(b)
	mustRun(t, "", "topics", "create", bs, "--partitions", "2", "orders")
	produceEach(t, b.Addr().String(), "orders", 2, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	member, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.ClientID("next-gen"),
		kgo.ConsumerGroup("cg"), kgo.ConsumeTopics("orders"), kgo.ServerSideBalancer())
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	for got := 0; got < 10; {
		fs := member.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consumer after %d records: %v", got, err)
		}
		got += fs.NumRecords()
	}

	r := mustRun(t, "", "groups", "list", bs, "--type", "consumer")
	if rows := parseGroupTable(t, r.stdout); len(rows) != 1 || rows[0]["GROUP"] != "cg" || rows[0]["TYPE"] != "Consumer" {
		t.Fatalf("list --type consumer: %q", r.stdout)
	}
	r = mustRun(t, "", "groups", "describe", bs, "cg", "--state", "--verbose")
	if rows := parseGroupTable(t, strings.ReplaceAll(r.stdout, " (", "(")); len(rows) != 1 || rows[0]["STATE"] != "Stable" ||
		rows[0]["ASSIGNMENT-STRATEGY"] != "uniform" || rows[0]["GROUP-EPOCH"] == "-" ||
		rows[0]["TARGET-ASSIGNMENT-EPOCH"] != rows[0]["GROUP-EPOCH"] || rows[0]["#MEMBERS"] != "1" {
		t.Fatalf("describe --state --verbose: %q", r.stdout)
	}
	epoch := parseGroupTable(t, strings.ReplaceAll(r.stdout, " (", "("))[0]["GROUP-EPOCH"]
	r = mustRun(t, "", "groups", "describe", bs, "cg", "--members", "--verbose")
	rows := parseGroupTable(t, r.stdout)
	if len(rows) != 1 || rows[0]["CLIENT-ID"] != "next-gen" || rows[0]["#PARTITIONS"] != "2" || rows[0]["CURRENT-EPOCH"] != epoch ||
		rows[0]["CURRENT-ASSIGNMENT"] != "orders:0,1" || rows[0]["TARGET-EPOCH"] != epoch || rows[0]["TARGET-ASSIGNMENT"] != "orders:0,1" {
		t.Fatalf("describe --members --verbose: %q", r.stdout)
	}
	memberID := rows[0]["CONSUMER-ID"]
	r = mustRun(t, "", "groups", "describe", bs, "cg")
	offsets := parseGroupTable(t, r.stdout)
	if len(offsets) != 2 || offsets[0]["CONSUMER-ID"] != memberID || offsets[1]["CLIENT-ID"] != "next-gen" || offsets[1]["LOG-END-OFFSET"] != "5" {
		t.Fatalf("describe: %q", r.stdout)
	}
	var described struct{ Groups []describedGroupJSON }
	mustJSON(t, &described, "groups", "describe", bs, "cg", "-o", "json")
	if g := described.Groups; len(g) != 1 || g[0].Type != "consumer" || g[0].ProtocolType != "consumer" || g[0].Protocol != "uniform" ||
		g[0].GroupEpoch == nil || len(g[0].Members) != 1 || g[0].Members[0].MemberEpoch == nil || len(g[0].Members[0].TargetAssignment["orders"]) != 2 {
		t.Fatalf("describe -o json: %+v", described)
	}
	mustFail(t, "inactive, but the current state is Stable", "", "groups", "reset-offsets", bs, "cg", "--topic", "orders", "--to-earliest")
}
