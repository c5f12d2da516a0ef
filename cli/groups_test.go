package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// groupProps make a one-node broker form groups without Kafka's 3 s wait for more
// members (group.initial.rebalance.delay.ms).
var groupProps = map[string]string{"group.initial.rebalance.delay.ms": "0"}

// describedRow is one data line of `groups describe`'s offsets view, by column name.
type describedRow map[string]string

// parseGroupTable splits a kafka-consumer-groups.sh table (a blank line, a header, data
// lines) into rows keyed by header. Cells hold no spaces, except the coordinator
// column of --state ("host:port (id)"), which callers join first.
func parseGroupTable(t *testing.T, out string) []describedRow {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) == 0 {
		t.Fatalf("no table in %q", out)
	}
	header := strings.Fields(lines[0])
	var rows []describedRow
	for _, l := range lines[1:] {
		cells := strings.Fields(l)
		if len(cells) != len(header) {
			t.Fatalf("line %q has %d cells, header %q has %d", l, len(cells), lines[0], len(header))
		}
		row := describedRow{}
		for i, h := range header {
			row[h] = cells[i]
		}
		rows = append(rows, row)
	}
	return rows
}

// offsetsByPartition maps PARTITION to column col of the rows.
func offsetsByPartition(rows []describedRow, col string) map[string]string {
	out := map[string]string{}
	for _, r := range rows {
		out[r["PARTITION"]] = r[col]
	}
	return out
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// produceEach writes n records to each of partitions 0..parts-1 of topic.
func produceEach(t *testing.T, addr, topic string, parts, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for p := range parts {
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Value: []byte(fmt.Sprintf("p%d-%d", p, i))})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// TestGroups_ConsumeDescribeResetDelete drives a group through the CLI: consume --group
// commits what it printed and a second run resumes after it; list and describe show
// the group, its offsets and lag; reset-offsets is a dry run unless --execute and is
// refused while a member is in the group, as is delete; delete-offsets and delete
// remove the offsets and the group.
func TestGroups_ConsumeDescribeResetDelete(t *testing.T) {
	b := startBroker(t, groupProps)
	bs := bootstrap(b)
	mustRun(t, "", "topics", "create", bs, "--partitions", "2", "orders")
	produceEach(t, b.Addr().String(), "orders", 2, 5)

	// Six of ten records, committed on exit; the next member of the group gets the
	// other four and nothing again.
	r := mustRun(t, "", "consume", bs, "--group", "billing", "--from-beginning", "--max-messages", "6", "orders")
	first := strings.Fields(r.stdout)
	if len(first) != 6 {
		t.Fatalf("first consume printed %q", r.stdout)
	}
	r = mustRun(t, "", "consume", bs, "--group", "billing", "--timeout-ms", "3000", "orders")
	second := strings.Fields(r.stdout)
	seen := map[string]bool{}
	for _, v := range append(first, second...) {
		if seen[v] {
			t.Fatalf("record %s consumed twice (first %q, second %q)", v, first, second)
		}
		seen[v] = true
	}
	if len(seen) != 10 {
		t.Fatalf("two runs of one group consumed %d distinct records, want 10 (first %q, second %q)", len(seen), first, second)
	}

	if r := mustRun(t, "", "groups", "list", bs); !strings.Contains("\n"+r.stdout, "\nbilling\n") {
		t.Fatalf("groups list %q lacks billing", r.stdout)
	}
	r = mustRun(t, "", "groups", "list", bs, "--state", "empty")
	if rows := parseGroupTable(t, r.stdout); len(rows) != 1 || rows[0]["GROUP"] != "billing" || rows[0]["STATE"] != "Empty" {
		t.Fatalf("groups list --state empty: %q", r.stdout)
	}
	if r := mustRun(t, "", "groups", "list", bs, "--state", "Stable"); strings.Contains(r.stdout, "billing") {
		t.Fatalf("groups list --state Stable lists an empty group: %q", r.stdout)
	}
	mustFail(t, "bad --state", "", "groups", "list", bs, "--state", "Sleepy")

	describeOffsets := func(col string) map[string]string {
		t.Helper()
		r := mustRun(t, "", "groups", "describe", bs, "billing")
		rows := parseGroupTable(t, r.stdout)
		for _, row := range rows {
			if row["GROUP"] != "billing" || row["TOPIC"] != "orders" || row["LOG-END-OFFSET"] != "5" || row["CONSUMER-ID"] != "-" {
				t.Fatalf("describe row %v", row)
			}
		}
		return offsetsByPartition(rows, col)
	}
	r = mustRun(t, "", "groups", "describe", bs, "billing")
	if !strings.Contains(r.stderr, "Consumer group 'billing' has no active members.") {
		t.Fatalf("describe of an empty group: stderr %q", r.stderr)
	}
	if got := describeOffsets("LAG"); !equalMaps(got, map[string]string{"0": "0", "1": "0"}) {
		t.Fatalf("lag after consuming everything: %v", got)
	}
	r = mustRun(t, "", "groups", "describe", bs, "billing", "--state")
	if rows := parseGroupTable(t, strings.ReplaceAll(r.stdout, " (", "(")); len(rows) != 1 ||
		rows[0]["STATE"] != "Empty" || rows[0]["#MEMBERS"] != "0" {
		t.Fatalf("describe --state: %q", r.stdout)
	}

	// Dry run by default: the table, nothing committed.
	r = mustRun(t, "", "groups", "reset-offsets", "billing", bs, "--topic", "orders", "--to-earliest")
	if rows := parseGroupTable(t, r.stdout); !equalMaps(offsetsByPartition(rows, "NEW-OFFSET"), map[string]string{"0": "0", "1": "0"}) {
		t.Fatalf("reset --to-earliest dry run: %q", r.stdout)
	}
	if got := describeOffsets("CURRENT-OFFSET"); !equalMaps(got, map[string]string{"0": "5", "1": "5"}) {
		t.Fatalf("a dry run moved the offsets: %v", got)
	}
	for _, step := range []struct {
		args []string
		want map[string]string
	}{
		{[]string{"--to-earliest"}, map[string]string{"0": "0", "1": "0"}},
		{[]string{"--shift-by", "3"}, map[string]string{"0": "3", "1": "3"}},
		{[]string{"--shift-by", "-10"}, map[string]string{"0": "0", "1": "0"}},
		{[]string{"--to-offset", "100"}, map[string]string{"0": "5", "1": "5"}},
		{[]string{"--to-offset", "2", "--topic", "orders:1"}, map[string]string{"0": "5", "1": "2"}},
		{[]string{"--to-datetime", "2000-01-01T00:00:00.000"}, map[string]string{"0": "0", "1": "0"}},
		{[]string{"--to-latest"}, map[string]string{"0": "5", "1": "5"}},
	} {
		args := append([]string{"groups", "reset-offsets", bs, "billing", "--execute"}, step.args...)
		if !strings.Contains(strings.Join(step.args, " "), "--topic") {
			args = append(args, "--topic", "orders")
		}
		mustRun(t, "", args...)
		if got := describeOffsets("CURRENT-OFFSET"); !equalMaps(got, step.want) {
			t.Fatalf("after reset %v: offsets %v, want %v", step.args, got, step.want)
		}
	}
	if got := describeOffsets("LAG"); !equalMaps(got, map[string]string{"0": "0", "1": "0"}) {
		t.Fatalf("lag after --to-latest: %v", got)
	}
	mustRun(t, "", "groups", "reset-offsets", bs, "billing", "--all-topics", "--to-offset", "1", "--execute")
	if got := describeOffsets("LAG"); !equalMaps(got, map[string]string{"0": "4", "1": "4"}) {
		t.Fatalf("lag after --all-topics --to-offset 1: %v", got)
	}
	mustFail(t, "needs one of", "", "groups", "reset-offsets", bs, "billing", "--topic", "orders")
	mustFail(t, "only one of", "", "groups", "reset-offsets", bs, "billing", "--topic", "orders", "--to-earliest", "--to-latest")
	mustFail(t, `topic "nope" does not exist`, "", "groups", "reset-offsets", bs, "billing", "--topic", "nope", "--to-earliest")
	mustFail(t, "bad --to-datetime", "", "groups", "reset-offsets", bs, "billing", "--topic", "orders", "--to-datetime", "yesterday")

	// A live member: describe shows it; reset-offsets and delete are refused.
	member, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.ClientID("live-member"),
		kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	pollCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for got := 0; got < 8; {
		fs := member.PollFetches(pollCtx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("live member after %d records: %v", got, err)
		}
		got += fs.NumRecords()
	}
	r = mustRun(t, "", "groups", "describe", bs, "billing", "--members", "--verbose")
	rows := parseGroupTable(t, r.stdout)
	if len(rows) != 1 || rows[0]["CLIENT-ID"] != "live-member" || rows[0]["#PARTITIONS"] != "2" ||
		rows[0]["ASSIGNMENT"] != "orders(0,1)" || rows[0]["HOST"] != "/127.0.0.1" || rows[0]["GROUP-INSTANCE-ID"] != "-" {
		t.Fatalf("describe --members --verbose: %q", r.stdout)
	}
	memberID := rows[0]["CONSUMER-ID"]
	r = mustRun(t, "", "groups", "describe", bs, "billing")
	for _, row := range parseGroupTable(t, r.stdout) {
		if row["CONSUMER-ID"] != memberID || row["CLIENT-ID"] != "live-member" {
			t.Fatalf("describe with a live member: %q", r.stdout)
		}
	}
	mustFail(t, "inactive, but the current state is Stable", "", "groups", "reset-offsets", bs, "billing", "--topic", "orders", "--to-earliest")
	mustFail(t, "NON_EMPTY_GROUP", "", "groups", "delete", bs, "billing")
	member.Close()

	// delete-offsets removes one partition's commit; delete removes the group.
	r = mustRun(t, "", "groups", "delete-offsets", bs, "billing", "--topic", "orders:0")
	if !strings.HasPrefix(r.stdout, "Request succeed for deleting offsets with topic orders group billing") ||
		!strings.Contains(r.stdout, "Successful") {
		t.Fatalf("delete-offsets: %q", r.stdout)
	}
	if got := describeOffsets("CURRENT-OFFSET"); len(got) != 1 || got["1"] == "" {
		t.Fatalf("after delete-offsets orders:0: offsets %v, want partition 1 only", got)
	}
	if r := mustRun(t, "", "groups", "delete", bs, "billing"); r.stdout != "Deletion of requested consumer groups ('billing') was successful.\n" {
		t.Fatalf("delete: %q", r.stdout)
	}
	mustFail(t, `consumer group "billing" does not exist`, "", "groups", "describe", bs, "billing")
	mustFail(t, "GROUP_ID_NOT_FOUND", "", "groups", "delete", bs, "billing")
	if r := mustRun(t, "", "groups", "list", bs); strings.Contains(r.stdout, "billing") {
		t.Fatalf("groups list after delete: %q", r.stdout)
	}
}

func TestGroups_FlagErrors(t *testing.T) {
	closed := "--bootstrap-server=" + closedPort(t)
	mustFail(t, "needs at least one GROUP", "", "groups", "describe", closed)
	mustFail(t, "cannot be used together", "", "groups", "describe", closed, "g", "--members", "--state")
	mustFail(t, "needs either --topic or --all-topics", "", "groups", "reset-offsets", closed, "g", "--to-earliest")
	mustFail(t, "bad --topic", "", "groups", "reset-offsets", closed, "g", "--topic", "t:x", "--to-earliest")
	mustFail(t, "needs --topic", "", "groups", "delete-offsets", closed, "g")
	mustFail(t, "--group cannot be used with --partition", "", "consume", closed, "--group", "g", "--partition", "0", "t")
	mustFail(t, "cannot reach bootstrap server", "", "groups", "list", closed, "--timeout", "2s")
}

func TestParseTopicSpecs(t *testing.T) {
	specs, err := parseTopicSpecs([]string{"a", "b:0,2"})
	if err != nil || len(specs) != 2 || specs[0].topic != "a" || specs[0].partitions != nil ||
		specs[1].topic != "b" || len(specs[1].partitions) != 2 || specs[1].partitions[1] != 2 {
		t.Fatalf("parseTopicSpecs: %+v, %v", specs, err)
	}
	for _, bad := range []string{"", ":1", "a:", "a:-1", "a:1,x"} {
		if _, err := parseTopicSpecs([]string{bad}); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParseKafkaDateTime(t *testing.T) {
	for in, want := range map[string]int64{
		"2024-03-01T12:00:00.250":       time.Date(2024, 3, 1, 12, 0, 0, 250e6, time.UTC).UnixMilli(),
		"2024-03-01T12:00:00.250Z":      time.Date(2024, 3, 1, 12, 0, 0, 250e6, time.UTC).UnixMilli(),
		"2024-03-01T12:00:00.000+01:00": time.Date(2024, 3, 1, 11, 0, 0, 0, time.UTC).UnixMilli(),
		"2024-03-01T12:00:00-0200":      time.Date(2024, 3, 1, 14, 0, 0, 0, time.UTC).UnixMilli(),
	} {
		got, err := parseKafkaDateTime(in)
		if err != nil || got.UnixMilli() != want {
			t.Errorf("%q: %v (%d), %v; want %d", in, got, got.UnixMilli(), err, want)
		}
	}
	if _, err := parseKafkaDateTime("2024-03-01"); err == nil {
		t.Error("a date without a time parsed")
	}
}

func TestParseGroupStates(t *testing.T) {
	got, err := parseGroupStates("stable, preparingrebalance")
	if err != nil || strings.Join(got, ",") != "Stable,PreparingRebalance" {
		t.Fatalf("got %v, %v", got, err)
	}
	if got, err := parseGroupStates("all"); err != nil || len(got) != 0 {
		t.Fatalf("all: %v, %v", got, err)
	}
	if _, err := parseGroupStates("Sleepy"); err == nil {
		t.Fatal("unknown state accepted")
	}
}

func TestGroupTableFormat(t *testing.T) {
	tb := table{columns: []column{{"GROUP", 15, true}, {"PARTITION", 10, false}, {"CLIENT-ID", 0, false}}}
	tb.add("a-very-long-group-name", "0", "c")
	tb.add("g", "12345678901", "c2")
	var w strings.Builder
	tb.write(&w)
	want := "GROUP                  PARTITION  CLIENT-ID\n" +
		"a-very-long-group-name 0          c\n" +
		"g                      12345678901 c2\n"
	if w.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", w.String(), want)
	}
	if got := formatAssignment(map[string][]int32{"b": {2, 0}, "a": {1}}); got != "a(1),b(0,2)" {
		t.Fatalf("formatAssignment: %q", got)
	}
	if got := formatAssignment(nil); got != "-" {
		t.Fatalf("formatAssignment(nil): %q", got)
	}
	if offsetOrDash(-1) != "-" || offsetOrDash(7) != strconv.Itoa(7) {
		t.Fatal("offsetOrDash")
	}
}
