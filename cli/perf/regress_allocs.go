package perf

// `petrel perf regress --check-allocs FILE` and `--write-allocs FILE`: the hot paths'
// allocations per operation, counts and never times, so that CI can hold them on any
// machine. Each benchmark runs once at a fixed iteration count; a count may exceed the
// recorded one by 1 % (rounded down: small counts must match exactly), the allocations
// a garbage collection during the run adds to a large count (the cleaner's pass).

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/petrel-broker/petrel/segment"
)

// allocEntry is one line of an allocations file: a benchmark, its iterations and its
// allocs/op.
type allocEntry struct {
	bench  hotBenchmark
	allocs int64
}

// allocsHeader heads a file written by --write-allocs.
const allocsHeader = `# allocs/op of the hot-path benchmarks at fixed iterations (BENCHMARK ITERATIONS ALLOCS/OP),
# checked by .ci/run with
#   go run . perf regress --check-allocs docs/bench/allocs.txt
# which fails when a benchmark allocates more per operation (1 % more for counts of 100
# and above). After a change that removes allocations, or must add some, record the
# counts with
#   go run . perf regress --write-allocs docs/bench/allocs.txt
# and say why in the commit.
`

// parseAllocsFile reads an allocations file: lines "package.BenchmarkName Nx allocs",
// blank lines and # comments.
func parseAllocsFile(data []byte) ([]allocEntry, error) {
	var entries []allocEntry
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		bad := func(why string) error { return fmt.Errorf("line %d %q: %s", i+1, line, why) }
		if len(f) != 3 {
			return nil, bad("want BENCHMARK ITERATIONS ALLOCS/OP")
		}
		pkg, name, ok := strings.Cut(f[0], ".")
		if !ok || pkg == "" || !strings.HasPrefix(name, "Benchmark") {
			return nil, bad("the benchmark is package.BenchmarkName")
		}
		n, err := strconv.Atoi(strings.TrimSuffix(f[1], "x"))
		if err != nil || n < 1 || !strings.HasSuffix(f[1], "x") {
			return nil, bad("iterations are Nx")
		}
		allocs, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || allocs < 0 {
			return nil, bad("allocs/op is a count")
		}
		entries = append(entries, allocEntry{bench: hotBenchmark{Package: "./" + pkg, Name: name, AllocsN: n}, allocs: allocs})
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("no benchmarks")
	}
	return entries, nil
}

// line is e as a line of an allocations file.
func (e allocEntry) line() string {
	return fmt.Sprintf("%s %dx %d", e.bench.label(), e.bench.AllocsN, e.allocs)
}

// formatAllocsFile is an allocations file of entries.
func formatAllocsFile(entries []allocEntry) []byte {
	var b bytes.Buffer
	b.WriteString(allocsHeader)
	for _, e := range entries {
		b.WriteString(e.line() + "\n")
	}
	return b.Bytes()
}

// allocsAllowed is the most allocs/op a benchmark recorded at recorded may measure.
func allocsAllowed(recorded int64) int64 { return recorded + recorded/100 }

// compareAllocs writes the table of recorded against measured counts (same order) to
// w, then, if any grew, the diff of the file's lines (- recorded, + measured), and
// returns how many grew.
func compareAllocs(w io.Writer, file string, recorded, measured []allocEntry) (grew int, err error) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BENCHMARK\tITERATIONS\tRECORDED ALLOCS/OP\tALLOCS/OP\t")
	var diff strings.Builder
	for i, r := range recorded {
		m := measured[i]
		verdict := "ok"
		switch {
		case m.allocs > allocsAllowed(r.allocs):
			verdict = "MORE"
			grew++
			diff.WriteString("-" + r.line() + "\n+" + m.line() + "\n")
		case m.allocs < r.allocs-r.allocs/100:
			verdict = "fewer: record them (--write-allocs)"
		}
		fmt.Fprintf(tw, "%s\t%dx\t%d\t%d\t%s\n", r.bench.label(), r.bench.AllocsN, r.allocs, m.allocs, verdict)
	}
	if err := tw.Flush(); err != nil {
		return grew, err
	}
	if grew > 0 {
		_, err = fmt.Fprintf(w, "--- %s\n+++ the checkout\n%s", file, diff.String())
	}
	return grew, err
}

// runAllocs is --check-allocs and --write-allocs in the module at root.
func runAllocs(ctx context.Context, w io.Writer, root string, a regressArgs, progress *regressProgress) error {
	file := a.writeAllocs
	var recorded []allocEntry
	if a.checkAllocs != "" {
		file = a.checkAllocs
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		if recorded, err = parseAllocsFile(data); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
	} else {
		for _, b := range a.benchmarks {
			recorded = append(recorded, allocEntry{bench: b})
		}
	}
	tmp, err := os.MkdirTemp("", "petrel-regress-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	side := &regressSide{name: "current", tree: root}
	benchmarks := make([]hotBenchmark, len(recorded))
	for i, r := range recorded {
		benchmarks[i] = r.bench
	}
	if err := side.build(ctx, benchmarks, tmp, progress); err != nil {
		return err
	}
	measured := make([]allocEntry, len(recorded))
	for i, r := range recorded {
		progress.set("measuring the allocations of " + r.bench.label())
		if side.bins[r.bench.Package] == "" {
			return fmt.Errorf("%s: no package %s in %s", file, r.bench.Package, root)
		}
		samples, err := side.run(ctx, r.bench, strconv.Itoa(r.bench.AllocsN)+"x")
		if err != nil {
			return err
		}
		if len(samples) != 1 || samples[0].AllocsPerOp < 0 {
			return fmt.Errorf("%s: the checkout in %s has no benchmark %s reporting allocs/op", file, root, r.bench.label())
		}
		measured[i] = allocEntry{bench: r.bench, allocs: int64(samples[0].AllocsPerOp)}
	}
	if a.writeAllocs != "" {
		if err := segment.WriteFileAtomic(file, formatAllocsFile(measured)); err != nil {
			return err
		}
		for _, m := range measured {
			fmt.Fprintln(w, m.line())
		}
		_, err := fmt.Fprintf(w, "recorded in %s\n", filepath.Clean(file))
		return err
	}
	grew, err := compareAllocs(w, file, recorded, measured)
	if err != nil {
		return err
	}
	if grew > 0 {
		return fmt.Errorf("%d of %d hot-path benchmarks allocate more per operation than %s records (diff above); remove the allocations, or record the counts with --write-allocs and say why in the commit",
			grew, len(recorded), file)
	}
	return nil
}
