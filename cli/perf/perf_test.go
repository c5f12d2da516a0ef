package perf

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestPerf_ProduceThenConsume(t *testing.T) {
	bs, createTopic := startBroker(t)
	createTopic("bench", 2)

	r := mustRun(t, "", "perf", "produce", bs, "--records", "500", "--record-size", "64", "bench")
	header, row := summaryTable(t, r.Stdout)
	for _, col := range []string{"RECORDS", "RECORDS/S", "MB/S", "P50 MS", "P99 MS", "P99.9 MS"} {
		if !containsField(header, col) {
			t.Fatalf("summary header %q lacks %q", header, col)
		}
	}
	if !strings.HasPrefix(strings.TrimSpace(row), "500 ") {
		t.Fatalf("summary row %q: want 500 records first", row)
	}

	r = mustRun(t, "", "perf", "produce", bs, "--records", "300", "--record-size", "100", "--acks", "1", "--compression", "lz4", "--json", "bench")
	sum := decodeSummary(t, r.Stdout)
	if sum.Records != 300 || sum.Errors != 0 || sum.Bytes != 300*100 {
		t.Fatalf("json summary %+v", sum)
	}
	if sum.RecordsPerSecond <= 0 || sum.MBPerSecond <= 0 || sum.LatencyMs == nil || sum.LatencyMs.P50 <= 0 ||
		sum.LatencyMs.P99 < sum.LatencyMs.P50 || sum.LatencyMs.P999 < sum.LatencyMs.P99 || sum.LatencyMs.Max < sum.LatencyMs.P999 {
		t.Fatalf("json summary figures %+v %+v", sum, sum.LatencyMs)
	}

	r = mustRun(t, "", "perf", "consume", bs, "--records", "800", "--json", "bench")
	sum = decodeSummary(t, r.Stdout)
	if sum.Records != 800 || sum.Bytes != 500*64+300*100 || sum.LatencyMs != nil {
		t.Fatalf("perf consume summary %+v", sum)
	}
	r = mustRun(t, "", "perf", "consume", bs, "--records", "100", "bench")
	if header, _ := summaryTable(t, r.Stdout); !containsField(header, "RECORDS/S") || containsField(header, "P50 MS") {
		t.Fatalf("perf consume header %q", header)
	}

	// Asking for more than there is fails after --timeout without records, still
	// printing what it read.
	r = mustFail(t, "no records for 500ms: consumed 800 of 900", "", "perf", "consume", bs, "--records", "900", "--timeout", "500ms", "--json", "bench")
	if sum := decodeSummary(t, r.Stdout); sum.Records != 800 {
		t.Fatalf("partial summary %+v", sum)
	}
}

func TestPerf_DurationAndThrottle(t *testing.T) {
	bs, createTopic := startBroker(t)
	createTopic("d", -1)
	// 200 records/s for 300ms: about 60 records, far below --records.
	r := mustRun(t, "", "perf", "produce", bs, "--records", "100000", "--duration", "300ms", "--throughput-limit", "200", "--json", "d")
	sum := decodeSummary(t, r.Stdout)
	if sum.Records < 10 || sum.Records > 100 || sum.Errors != 0 {
		t.Fatalf("throttled run produced %d records (%d errors)", sum.Records, sum.Errors)
	}
	mustFail(t, "give --records, --duration or both", "", "perf", "produce", bs, "d")
	mustFail(t, "bad --record-size -1", "", "perf", "produce", bs, "--records", "1", "--record-size", "-1", "d")
	mustFail(t, "bad --max-buffered-records -1", "", "perf", "produce", bs, "--records", "1", "--max-buffered-records", "-1", "d")
	// One record in flight at a time: every record is acknowledged, one by one.
	r = mustRun(t, "", "perf", "produce", bs, "--records", "50", "--max-buffered-records", "1", "--json", "d")
	if sum := decodeSummary(t, r.Stdout); sum.Records != 50 || sum.Errors != 0 {
		t.Fatalf("one record in flight: %d records (%d errors)", sum.Records, sum.Errors)
	}
}

func TestPerfReport_ProgressLineAndTable(t *testing.T) {
	s := newPerfStats(true)
	s.recordAck(2*time.Millisecond, 100, nil)
	s.recordAck(4*time.Millisecond, 100, nil)
	s.recordAck(time.Millisecond, 100, errTest)
	line := s.progressLine("sent")
	if !strings.HasPrefix(line, "2 records sent, ") || !strings.Contains(line, "3.0 ms avg latency, 4.0 ms max latency.") {
		t.Fatalf("progress line %q", line)
	}
	if again := s.progressLine("sent"); !strings.HasPrefix(again, "0 records sent, ") {
		t.Fatalf("window not reset: %q", again)
	}
	s.finish()
	sum := s.summary()
	if sum.Records != 2 || sum.Errors != 1 || sum.Bytes != 200 || sum.LatencyMs.Max < 3.99 || sum.LatencyMs.Max > 4.01 {
		t.Fatalf("summary %+v %+v", sum, sum.LatencyMs)
	}
	var out bytes.Buffer
	if err := writeSummary(&out, sum, false); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\n"); n != 2 {
		t.Fatalf("table has %d lines: %q", n, out.String())
	}
}

type testError string

func (e testError) Error() string { return string(e) }

const errTest = testError("test failure")

// summaryTable splits perf's table output into its header and row.
func summaryTable(t *testing.T, out string) (header, row string) {
	t.Helper()
	ls := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(ls) != 2 {
		t.Fatalf("summary table %q: want a header and one row", out)
	}
	return ls[0], ls[1]
}

// containsField reports whether an aligned header has the column name (which may hold
// one space, as "P50 MS").
func containsField(header, name string) bool {
	for _, f := range strings.Split(header, "  ") {
		if strings.TrimSpace(f) == name {
			return true
		}
	}
	return false
}

func decodeSummary(t *testing.T, out string) perfSummary {
	t.Helper()
	var sum perfSummary
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sum); err != nil {
		t.Fatalf("decoding %q: %v", out, err)
	}
	return sum
}
