package perf

import "testing"

func TestPerf_ConsumeCeilingReadsCannedBatches(t *testing.T) {
	// kgo against the in-process canned broker: every record arrives once, in order
	// (kgo drops records below its fetch offset, so rewritten base offsets must follow).
	r := mustRun(t, "", "perf", "consume-ceiling", "--records", "3000", "--partitions", "3", "--record-size", "100",
		"--batch-records", "40", "--max-partition-fetch-bytes", "20000", "--json")
	if sum := decodeSummary(t, r.Stdout); sum.Records != 3000 || sum.Errors != 0 || sum.Bytes != 3000*100 || sum.MBPerSecond <= 0 {
		t.Fatalf("consume-ceiling summary %+v", sum)
	}
	// fetch.max.bytes below one partition's batches still moves every partition forward.
	r = mustRun(t, "", "perf", "consume-ceiling", "--records", "500", "--partitions", "2", "--record-size", "10",
		"--batch-records", "5", "--fetch-max-bytes", "1", "--max-concurrent-fetches", "1", "--fetch-max-wait", "100ms", "--json")
	if sum := decodeSummary(t, r.Stdout); sum.Records != 500 || sum.Bytes != 500*10 {
		t.Fatalf("consume-ceiling with a 1-byte fetch.max.bytes: %+v", sum)
	}
	mustFail(t, "bad --partitions 0", "", "perf", "consume-ceiling", "--records", "1", "--partitions", "0")
	mustFail(t, "bad --batch-records 0", "", "perf", "consume-ceiling", "--records", "1", "--batch-records", "0")
	mustFail(t, "bad --max-concurrent-fetches -1", "", "perf", "consume-ceiling", "--records", "1", "--max-concurrent-fetches", "-1")
	mustFail(t, "bad --fetch-max-wait -1s", "", "perf", "consume-ceiling", "--records", "1", "--fetch-max-wait", "-1s")
}

func TestPerf_ConsumeTakesKgoFetchSettings(t *testing.T) {
	bs, createTopic := startBroker(t)
	createTopic("kgoflags", 2)
	mustRun(t, "", "perf", "produce", bs, "--records", "300", "--record-size", "64", "--acks", "1", "kgoflags")
	r := mustRun(t, "", "perf", "consume", bs, "--records", "300", "--max-concurrent-fetches", "1", "--fetch-max-wait", "50ms", "--json", "kgoflags")
	if sum := decodeSummary(t, r.Stdout); sum.Records != 300 || sum.Bytes != 300*64 {
		t.Fatalf("perf consume with kgo fetch settings: %+v", sum)
	}
}

func TestPerf_ProduceCeilingAcknowledgesEveryRecord(t *testing.T) {
	// kgo (idempotent, acks=all) against the in-process canned broker: every record is
	// acknowledged, one in flight and batched alike.
	r := mustRun(t, "", "perf", "produce-ceiling", "--records", "500", "--record-size", "100", "--max-buffered-records", "1", "--json")
	if sum := decodeSummary(t, r.Stdout); sum.Records != 500 || sum.Errors != 0 || sum.Bytes != 500*100 {
		t.Fatalf("produce-ceiling one in flight: %+v", sum)
	}
	r = mustRun(t, "", "perf", "produce-ceiling", "--records", "5000", "--record-size", "10", "--json")
	if sum := decodeSummary(t, r.Stdout); sum.Records != 5000 || sum.Errors != 0 {
		t.Fatalf("produce-ceiling batched: %+v", sum)
	}
	mustFail(t, "takes no arguments", "", "perf", "produce-ceiling", "--records", "1", "topic")
}
