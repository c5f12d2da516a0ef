package perf

import (
	"bytes"
	"strings"
	"testing"
)

func TestAllocsFileRoundTrip(t *testing.T) {
	entries := []allocEntry{
		{hotBenchmark{Package: "./segment", Name: "BenchmarkAppend/16KiB", AllocsN: 200}, 0},
		{hotBenchmark{Package: "./segment", Name: "BenchmarkCleanPass", AllocsN: 10}, 1214},
	}
	data := formatAllocsFile(entries)
	if !strings.HasPrefix(string(data), allocsHeader) || !strings.HasSuffix(string(data), "\nsegment.BenchmarkAppend/16KiB 200x 0\nsegment.BenchmarkCleanPass 10x 1214\n") {
		t.Fatalf("file:\n%s", data)
	}
	got, err := parseAllocsFile(data)
	if err != nil || len(got) != 2 || got[0] != entries[0] || got[1] != entries[1] {
		t.Fatalf("parsed %+v, %v", got, err)
	}
}

func TestParseAllocsFile_Errors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"# nothing\n", "no benchmarks"},
		{"segment.BenchmarkAppend 200x\n", `line 1 "segment.BenchmarkAppend 200x": want BENCHMARK ITERATIONS ALLOCS/OP`},
		{"\nBenchmarkAppend 200x 3\n", "line 2 \"BenchmarkAppend 200x 3\": the benchmark is package.BenchmarkName"},
		{"segment.BenchmarkAppend 200 3\n", "iterations are Nx"},
		{"segment.BenchmarkAppend 0x 3\n", "iterations are Nx"},
		{"segment.BenchmarkAppend 2x -1\n", "allocs/op is a count"},
	} {
		if _, err := parseAllocsFile([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.in, err, tc.want)
		}
	}
}

// Small counts must match; counts of 100 and more may be 1 % over (a garbage
// collection's allocations during the run). Fewer than the same band below is fine and
// says so.
func TestCompareAllocs(t *testing.T) {
	entry := func(name string, allocs int64) allocEntry {
		return allocEntry{hotBenchmark{Package: "./replication", Name: name, AllocsN: 200}, allocs}
	}
	recorded := []allocEntry{entry("BenchmarkA", 0), entry("BenchmarkB", 35), entry("BenchmarkC", 1214), entry("BenchmarkD", 1214), entry("BenchmarkE", 9), entry("BenchmarkF", 1214)}
	measured := []allocEntry{entry("BenchmarkA", 0), entry("BenchmarkB", 36), entry("BenchmarkC", 1226), entry("BenchmarkD", 1227), entry("BenchmarkE", 8), entry("BenchmarkF", 1202)}
	var out bytes.Buffer
	grew, err := compareAllocs(&out, "docs/bench/allocs.txt", recorded, measured)
	if err != nil || grew != 2 {
		t.Fatalf("grew %d, %v:\n%s", grew, err, out.String())
	}
	for _, want := range []string{
		"replication.BenchmarkA  200x        0                   0          ok\n",
		"replication.BenchmarkB  200x        35                  36         MORE\n",
		"replication.BenchmarkC  200x        1214                1226       ok\n",
		"replication.BenchmarkD  200x        1214                1227       MORE\n",
		"replication.BenchmarkE  200x        9                   8          fewer: record them (--write-allocs)\n",
		"replication.BenchmarkF  200x        1214                1202       ok\n",
		"--- docs/bench/allocs.txt\n+++ the checkout\n" +
			"-replication.BenchmarkB 200x 35\n+replication.BenchmarkB 200x 36\n" +
			"-replication.BenchmarkD 200x 1214\n+replication.BenchmarkD 200x 1227\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
