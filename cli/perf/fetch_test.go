package perf

import (
	"encoding/binary"
	"errors"
	"testing"
)

func TestPerf_FetchCountsBatchesAndFetchSizes(t *testing.T) {
	bs, createTopic := startBroker(t)
	createTopic("raw", 3)
	mustRun(t, "", "perf", "produce", bs, "--records", "600", "--record-size", "64", "--acks", "1", "raw")

	// The raw fetcher reads every partition from its log start and counts records
	// from batch headers; its bytes are whole batches, so more than the values.
	r := mustRun(t, "", "perf", "fetch", bs, "--records", "600", "--json", "raw")
	sum := decodeSummary(t, r.Stdout)
	if sum.Records != 600 || sum.Errors != 0 || sum.Bytes <= 600*64 || sum.MBPerSecond <= 0 {
		t.Fatalf("perf fetch summary %+v", sum)
	}
	// A partition limit below one batch still moves forward, a batch at a time
	// (Kafka's rule: the first batch comes even when larger than the limit).
	r = mustRun(t, "", "perf", "fetch", bs, "--records", "600", "--max-partition-fetch-bytes", "1", "--fetch-max-bytes", "1", "--json", "raw")
	if small := decodeSummary(t, r.Stdout); small.Records != 600 || small.Bytes != sum.Bytes {
		t.Fatalf("perf fetch with 1-byte limits: %+v, want the same %d records and %d bytes", small, sum.Records, sum.Bytes)
	}
	// The consumer takes the same flags.
	r = mustRun(t, "", "perf", "consume", bs, "--records", "600", "--max-partition-fetch-bytes", "100", "--fetch-max-bytes", "1000", "--json", "raw")
	if sum := decodeSummary(t, r.Stdout); sum.Records != 600 || sum.Bytes != 600*64 {
		t.Fatalf("perf consume with small fetches: %+v", sum)
	}

	// Asking for more than there is fails after --timeout, still printing what it read.
	r = mustFail(t, "no records for 500ms: fetched 600 of 700", "", "perf", "fetch", bs, "--records", "700", "--timeout", "500ms", "--json", "raw")
	if sum := decodeSummary(t, r.Stdout); sum.Records != 600 {
		t.Fatalf("partial summary %+v", sum)
	}
	mustFail(t, "bad --fetch-max-bytes 0: want 1 to 1073741824", "", "perf", "fetch", bs, "--records", "1", "--fetch-max-bytes", "0", "raw")
	mustFail(t, "bad --max-partition-fetch-bytes -1: want 1 to 1073741824", "", "perf", "consume", bs, "--records", "1", "--max-partition-fetch-bytes", "-1", "raw")
	mustFail(t, "--command-config (TLS, SASL) is not supported", "", "perf", "fetch", bs, "--records", "1", "--command-config", "client.properties", "raw")
	mustFail(t, `topic "nope" does not exist`, "", "perf", "fetch", bs, "--records", "1", "nope")
}

// testBatch returns a v2 record batch header of size bytes (the body is zeros) with
// baseOffset and count records.
func testBatch(baseOffset int64, count int32, size int) []byte {
	b := make([]byte, size)
	binary.BigEndian.PutUint64(b, uint64(baseOffset))
	binary.BigEndian.PutUint32(b[batchLengthAt:], uint32(size-batchLogOverhead))
	b[batchMagicAt] = 2
	binary.BigEndian.PutUint32(b[batchLastDeltaAt:], uint32(count-1))
	binary.BigEndian.PutUint32(b[batchRecordCountAt:], uint32(count))
	return b
}

func TestWalkBatches(t *testing.T) {
	two := append(testBatch(10, 3, 100), testBatch(13, 2, 80)...)
	records, bytes, next, err := walkBatches(append(two, testBatch(15, 4, 90)[:50]...)) // a partial third batch
	if err != nil || records != 5 || bytes != 180 || next != 15 {
		t.Fatalf("walkBatches = %d records, %d bytes, next %d, %v; want 5, 180, 15", records, bytes, next, err)
	}
	if records, bytes, _, err := walkBatches(nil); err != nil || records != 0 || bytes != 0 {
		t.Fatalf("walkBatches(nil) = %d, %d, %v", records, bytes, err)
	}
	old := testBatch(0, 1, 100)
	old[batchMagicAt] = 1
	if _, _, _, err := walkBatches(old); !errors.Is(err, errBadBatch) {
		t.Fatalf("magic 1: %v, want errBadBatch", err)
	}
	short := testBatch(0, 1, 100)
	binary.BigEndian.PutUint32(short[batchLengthAt:], 3)
	if _, _, _, err := walkBatches(short); !errors.Is(err, errBadBatch) {
		t.Fatalf("length 3: %v, want errBadBatch", err)
	}
}

// FuzzWalkBatches: any bytes give counts that stay within the input, or errBadBatch;
// never a panic.
func FuzzWalkBatches(f *testing.F) {
	f.Add(append(testBatch(10, 3, 100), testBatch(13, 2, 80)...))
	f.Add(testBatch(0, 1, 61)[:30])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		records, bytes, _, err := walkBatches(b)
		if err != nil && !errors.Is(err, errBadBatch) {
			t.Fatalf("unexpected error %v", err)
		}
		if bytes < 0 || bytes > int64(len(b)) || records < 0 {
			t.Fatalf("%d records, %d bytes of %d", records, bytes, len(b))
		}
	})
}
