package perf

// `petrel perf regress`'s figures: the benchmark lines of `go test -bench` output,
// parsed into samples, each benchmark's median over the interleaved runs, and the table
// of current against baseline.

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// benchSample is one benchmark line's figures.
type benchSample struct {
	NsPerOp     float64
	AllocsPerOp float64 // -1: the line had none (no -benchmem, no ReportAllocs)
}

// procsSuffix is the -GOMAXPROCS suffix the testing package adds to a benchmark's name.
var procsSuffix = regexp.MustCompile(`-\d+$`)

// parseBenchOutput returns the samples of the benchmark lines in r (`go test -bench`
// output), by benchmark name without its -GOMAXPROCS suffix. Other lines are skipped.
func parseBenchOutput(r io.Reader) (map[string][]benchSample, error) {
	out := map[string][]benchSample{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		// name, iterations, then value-unit pairs
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.ParseInt(f[1], 10, 64); err != nil {
			continue
		}
		s, ok := benchSample{AllocsPerOp: -1}, false
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("benchmark line %q: %w", sc.Text(), err)
			}
			switch f[i+1] {
			case "ns/op":
				s.NsPerOp, ok = v, true
			case "allocs/op":
				s.AllocsPerOp = v
			}
		}
		if ok {
			name := procsSuffix.ReplaceAllString(f[0], "")
			out[name] = append(out[name], s)
		}
	}
	return out, sc.Err()
}

// median returns the median of xs (the mean of the middle two for an even count), or
// -1 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return -1
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// regressRow is one benchmark's line of the table: the medians of its samples on each
// side. A side without samples (the benchmark is missing there) has a nil slice.
type regressRow struct {
	Name     string
	Baseline []benchSample // nil: the baseline does not have the benchmark ("new")
	Current  []benchSample // nil: the current checkout does not have it ("missing")
}

// medians returns the median ns/op and allocs/op of samples.
func medians(samples []benchSample) (ns, allocs float64) {
	nsAll := make([]float64, 0, len(samples))
	allocsAll := make([]float64, 0, len(samples))
	for _, s := range samples {
		nsAll = append(nsAll, s.NsPerOp)
		if s.AllocsPerOp >= 0 {
			allocsAll = append(allocsAll, s.AllocsPerOp)
		}
	}
	return median(nsAll), median(allocsAll)
}

// Ratio is the current median ns/op over the baseline's: above 1 the current checkout
// is slower. ok is false when a side has no samples.
func (r regressRow) Ratio() (ratio float64, ok bool) {
	if len(r.Baseline) == 0 || len(r.Current) == 0 {
		return 0, false
	}
	base, _ := medians(r.Baseline)
	cur, _ := medians(r.Current)
	if base <= 0 {
		return 0, false
	}
	return cur / base, true
}

// writeRegressTable prints rows as an aligned table: each benchmark's median ns/op on
// both sides, their ratio (current / baseline) and the median allocs/op on both sides.
// A benchmark the baseline lacks says "new"; one the current checkout lacks, "missing".
func writeRegressTable(w io.Writer, rows []regressRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "BENCHMARK\tBASELINE NS/OP\tCURRENT NS/OP\tRATIO\tBASELINE ALLOCS/OP\tCURRENT ALLOCS/OP\t")
	for _, r := range rows {
		baseNs, baseAllocs := sideFigures(r.Baseline, "new")
		curNs, curAllocs := sideFigures(r.Current, "missing")
		ratio := "-"
		if q, ok := r.Ratio(); ok {
			ratio = fmt.Sprintf("%.2f", q)
		} else if len(r.Baseline) == 0 {
			ratio = "new"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Name, baseNs, curNs, ratio, baseAllocs, curAllocs)
	}
	return tw.Flush()
}

// sideFigures formats one side's median ns/op and allocs/op, or absent twice when it
// has no samples.
func sideFigures(samples []benchSample, absent string) (ns, allocs string) {
	if len(samples) == 0 {
		return absent, absent
	}
	n, a := medians(samples)
	allocs = "-"
	if a >= 0 {
		allocs = strconv.FormatFloat(a, 'f', -1, 64)
	}
	return formatNs(n), allocs
}

// formatNs prints ns/op with three significant digits or more, as go test does.
func formatNs(ns float64) string {
	switch {
	case ns >= 100:
		return strconv.FormatFloat(ns, 'f', 0, 64)
	case ns >= 10:
		return strconv.FormatFloat(ns, 'f', 1, 64)
	default:
		return strconv.FormatFloat(ns, 'f', 2, 64)
	}
}
