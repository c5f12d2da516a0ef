package perf

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseBenchOutput(t *testing.T) {
	out := `goos: linux
pkg: github.com/petrel-broker/petrel/segment
BenchmarkAppend/16KiB-2         	    8677	     77881 ns/op	 214.11 MB/s	       4 B/op	       2 allocs/op
BenchmarkAppend/16KiB-2         	    8000	     70000 ns/op	 214.11 MB/s	       4 B/op	       2 allocs/op
BenchmarkCleanPass-16           	       3	 115404203 ns/op	  72.75 MB/s	  985586 B/op	    1215 allocs/op
BenchmarkNoAllocs               	     100	        12.5 ns/op
--- FAIL: BenchmarkBroken
Benchmark results follow
PASS
`
	got, err := parseBenchOutput(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]benchSample{
		"BenchmarkAppend/16KiB": {{77881, 2}, {70000, 2}},
		"BenchmarkCleanPass":    {{115404203, 1215}},
		"BenchmarkNoAllocs":     {{12.5, -1}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for name, w := range want {
		g := got[name]
		if len(g) != len(w) {
			t.Fatalf("%s: got %v, want %v", name, g, w)
		}
		for i := range w {
			if g[i] != w[i] {
				t.Errorf("%s[%d]: got %+v, want %+v", name, i, g[i], w[i])
			}
		}
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{nil, -1},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// The table shows medians and the ratio current / baseline; a benchmark the baseline
// lacks says "new", one the checkout lacks "missing".
func TestWriteRegressTable(t *testing.T) {
	rows := []regressRow{
		{Name: "replication.BenchmarkLeaderAppend",
			Baseline: []benchSample{{100, 0}, {120, 0}, {110, 0}},
			Current:  []benchSample{{130, 1}, {125, 1}, {500, 1}}},
		{Name: "replication.BenchmarkPurgatoryFetch", Current: []benchSample{{2000, 35}}},
		{Name: "segment.BenchmarkGone", Baseline: []benchSample{{50, -1}}},
	}
	var out bytes.Buffer
	if err := writeRegressTable(&out, rows); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	fields := func(i int) string { return strings.Join(strings.Fields(lines[i]), " ") }
	want := []string{
		"BENCHMARK BASELINE NS/OP CURRENT NS/OP RATIO BASELINE ALLOCS/OP CURRENT ALLOCS/OP",
		"replication.BenchmarkLeaderAppend 110 130 1.18 0 1",
		"replication.BenchmarkPurgatoryFetch new 2000 new new 35",
		"segment.BenchmarkGone 50.0 missing - - missing",
	}
	if len(lines) != len(want) {
		t.Fatalf("table:\n%s", out.String())
	}
	for i, w := range want {
		if fields(i) != w {
			t.Errorf("line %d: %q, want %q", i, fields(i), w)
		}
	}
	if r, ok := rows[0].Ratio(); !ok || r < 1.18 || r > 1.19 {
		t.Errorf("ratio %v %v", r, ok)
	}
}

// A side runs a benchmark from its test binary and keeps its samples; a binary without
// the benchmark gives none (the table's "new"), and a side without the package runs
// nothing.
func TestRegressSideRun(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	with := script("with.test", `test "$4" = '^BenchmarkAppend$/^16KiB$' || exit 3
test "$6" = 7x || exit 4
echo 'BenchmarkAppend/16KiB-2   7   900 ns/op   0 B/op   0 allocs/op'
echo PASS
`)
	without := script("without.test", "echo PASS\n")
	failing := script("failing.test", "echo '--- FAIL: BenchmarkAppend'; exit 1\n")
	b := hotBenchmark{Package: "./segment", Name: "BenchmarkAppend/16KiB"}
	for _, tc := range []struct {
		bin     string
		want    []benchSample
		wantErr string
	}{
		{with, []benchSample{{900, 0}}, ""},
		{without, nil, ""},
		{"", nil, ""},
		{failing, nil, "--- FAIL: BenchmarkAppend"},
	} {
		s := &regressSide{name: "baseline", tree: dir, bins: map[string]string{"./segment": tc.bin}}
		if err := os.MkdirAll(filepath.Join(dir, "segment"), 0o755); err != nil {
			t.Fatal(err)
		}
		got, err := s.run(context.Background(), b, "7x")
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "segment.BenchmarkAppend/16KiB of the baseline") {
				t.Errorf("%s: error %v", tc.bin, err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) || (len(got) == 1 && got[0] != tc.want[0]) {
			t.Errorf("%s: %v, %v; want %v", tc.bin, got, err, tc.want)
		}
	}
}
