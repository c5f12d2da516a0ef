package perf

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	ucli "github.com/urfave/cli/v2"
)

// hotBenchmark is one benchmark of the hot paths that `petrel perf regress` measures.
type hotBenchmark struct {
	Path    string // the hot path it stands for: produce, fetch, purgatory or cleaner
	Package string // its package, relative to the repository's root ("./segment")
	Name    string // its full name, sub-benchmark included
	AllocsN int    // iterations of the allocation check (-benchtime Nx)
}

// hotBenchmarks are the hot paths' benchmarks, in the table's order. Their allocation
// counts are checked at AllocsN iterations, large enough that what a benchmark
// allocates once (a pool's first buffers, a map's growth) rounds away in allocs/op.
var hotBenchmarks = []hotBenchmark{
	{"produce", "./segment", "BenchmarkAppend/16KiB", 200},
	{"produce", "./replication", "BenchmarkLeaderAppend", 200},
	{"fetch", "./replication", "BenchmarkFetchServerRead", 200},
	{"purgatory", "./replication", "BenchmarkPurgatoryAcksAll", 200},
	{"purgatory", "./replication", "BenchmarkPurgatoryFetch", 200},
	{"cleaner", "./segment", "BenchmarkCleanPass", 10},
}

// label names b in tables and in docs/bench/allocs.txt: its package and its name.
func (b hotBenchmark) label() string {
	return strings.TrimPrefix(b.Package, "./") + "." + b.Name
}

// pattern is the -test.bench expression that matches b alone.
func (b hotBenchmark) pattern() string {
	parts := strings.Split(b.Name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// perfRegressCommand is `petrel perf regress`: the hot paths' benchmarks of the
// current checkout against a baseline revision's, both built and run here in one
// interleaved run, as ratios; or (--check-allocs) the current checkout's allocations
// per operation against the recorded counts, as CI runs it.
func perfRegressCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "regress",
		Usage: "compare the hot paths' benchmarks (produce, fetch, purgatory, cleaner) with a baseline revision, or check their allocations",
		Description: "Builds the benchmarks of the checkout in --dir and of the baseline revision (a\n" +
			"temporary git worktree) with the Go toolchain, runs them alternately --count times\n" +
			"and prints each benchmark's median ns/op and allocs/op on both sides with the\n" +
			"ratio current / baseline (above 1: slower). The baseline is --baseline, else the\n" +
			"newest v* tag, else the revision in " + BaselineFile + ".\n" +
			"--check-allocs FILE runs the current checkout only, at fixed iterations, and fails\n" +
			"if a benchmark allocates more per operation than FILE records; --write-allocs FILE\n" +
			"records the counts.",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "dir", Usage: "the petrel repository to measure", Value: "."},
			&ucli.StringFlag{Name: "baseline", Usage: "baseline git revision (default: the newest v* tag, else " + BaselineFile + ")"},
			&ucli.IntFlag{Name: "count", Usage: "runs of each benchmark on each side, interleaved; the table shows medians", Value: 3},
			&ucli.StringFlag{Name: "benchtime", Usage: "go test -benchtime of each run (a duration, or Nx iterations)", Value: "200ms"},
			&ucli.StringFlag{Name: "bench", Usage: "only the hot-path benchmarks whose package.Name matches this regular expression"},
			&ucli.StringFlag{Name: "out", Usage: "also write each side's raw benchmark output to this directory (baseline.txt, current.txt; for benchstat)"},
			&ucli.StringFlag{Name: "check-allocs", Usage: "check the current checkout's allocs/op against this file's counts (no baseline; CI)"},
			&ucli.StringFlag{Name: "write-allocs", Usage: "record the current checkout's allocs/op in this file"},
		},
		Action: runPerfRegress,
	}
}

// regressArgs are `petrel perf regress`'s checked arguments.
type regressArgs struct {
	dir, baseline, benchtime, out string
	count                         int
	benchmarks                    []hotBenchmark
	checkAllocs, writeAllocs      string
}

// benchtimeFlag is what go test accepts as -benchtime: a duration or Nx.
var benchtimeFlag = regexp.MustCompile(`^[1-9][0-9]*x$`)

func parseRegressArgs(c *ucli.Context) (regressArgs, error) {
	a := regressArgs{dir: c.String("dir"), baseline: c.String("baseline"), benchtime: c.String("benchtime"),
		out: c.String("out"), count: c.Int("count"), checkAllocs: c.String("check-allocs"), writeAllocs: c.String("write-allocs")}
	if c.Args().Len() > 0 {
		return a, fmt.Errorf("perf regress takes no arguments, got %d", c.Args().Len())
	}
	if a.count < 1 {
		return a, fmt.Errorf("bad --count %d", a.count)
	}
	if d, err := time.ParseDuration(a.benchtime); (err != nil || d <= 0) && !benchtimeFlag.MatchString(a.benchtime) {
		return a, fmt.Errorf("bad --benchtime %q (a duration such as 200ms, or Nx iterations such as 100x)", a.benchtime)
	}
	if a.checkAllocs != "" && a.writeAllocs != "" {
		return a, errors.New("give --check-allocs or --write-allocs, not both")
	}
	if (a.checkAllocs != "" || a.writeAllocs != "") && (a.baseline != "" || c.String("bench") != "") {
		return a, errors.New("--check-allocs and --write-allocs measure every hot-path benchmark of the current checkout: no --baseline or --bench")
	}
	var filter *regexp.Regexp
	if expr := c.String("bench"); expr != "" {
		re, err := regexp.Compile(expr)
		if err != nil {
			return a, fmt.Errorf("bad --bench: %w", err)
		}
		filter = re
	}
	for _, b := range hotBenchmarks {
		if filter == nil || filter.MatchString(b.label()) {
			a.benchmarks = append(a.benchmarks, b)
		}
	}
	if len(a.benchmarks) == 0 {
		return a, fmt.Errorf("--bench %q matches none of the hot-path benchmarks (%s)", c.String("bench"), hotBenchmarkLabels())
	}
	return a, nil
}

// hotBenchmarkLabels lists every hot-path benchmark.
func hotBenchmarkLabels() string {
	labels := make([]string, len(hotBenchmarks))
	for i, b := range hotBenchmarks {
		labels[i] = b.label()
	}
	return strings.Join(labels, ", ")
}

func runPerfRegress(c *ucli.Context) error {
	a, err := parseRegressArgs(c)
	if err != nil {
		return err
	}
	ctx, stop := clientcmd.SignalContext(c.Context)
	defer stop()
	if _, err := exec.LookPath("go"); err != nil {
		return fmt.Errorf("go not found: petrel perf regress builds the benchmarks with the Go toolchain: %w", err)
	}
	progress := &regressProgress{start: time.Now(), doing: "starting"}
	stopProgress := sync.OnceFunc(startProgress(clientcmd.LockErrWriter(c), progressInterval, progress.line))
	defer stopProgress()
	if a.checkAllocs != "" || a.writeAllocs != "" {
		root, err := moduleRoot(a.dir)
		if err != nil {
			return err
		}
		return runAllocs(ctx, c.App.Writer, root, a, progress)
	}
	root, err := checkoutRoot(ctx, a.dir)
	if err != nil {
		return err
	}
	if root, err = moduleRoot(root); err != nil {
		return err
	}
	base, err := resolveBaseline(ctx, root, a.baseline)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "petrel-regress-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	progress.set("checking out the baseline " + shortCommit(base.Commit))
	removeWorktree, err := addWorktree(ctx, root, filepath.Join(tmp, "baseline"), base.Commit)
	if err != nil {
		return err
	}
	defer removeWorktree()
	sides := []*regressSide{
		{name: "current", tree: root},
		{name: "baseline", tree: filepath.Join(tmp, "baseline")},
	}
	for _, s := range sides {
		if err := s.build(ctx, a.benchmarks, filepath.Join(tmp, "bin"), progress); err != nil {
			return err
		}
	}
	rows := make([]regressRow, len(a.benchmarks))
	for i, b := range a.benchmarks {
		rows[i].Name = b.label()
	}
	for round := range a.count {
		// Alternate which side goes first, so that a drift in the machine's speed
		// weighs on both alike.
		order := sides
		if round%2 == 1 {
			order = []*regressSide{sides[1], sides[0]}
		}
		for i, b := range a.benchmarks {
			for _, s := range order {
				progress.set(fmt.Sprintf("run %d of %d: %s of the %s", round+1, a.count, b.label(), s.desc()))
				samples, err := s.run(ctx, b, a.benchtime)
				if err != nil {
					return err
				}
				if s == sides[0] {
					rows[i].Current = append(rows[i].Current, samples...)
				} else {
					rows[i].Baseline = append(rows[i].Baseline, samples...)
				}
			}
		}
	}
	stopProgress()
	if a.out != "" {
		for _, s := range sides {
			if err := os.WriteFile(filepath.Join(a.out, s.name+".txt"), []byte(s.raw.String()), 0o644); err != nil {
				return err
			}
		}
	}
	name := shortCommit(base.Commit)
	if !strings.HasPrefix(base.Commit, base.Rev) {
		name += " " + base.Rev
	}
	fmt.Fprintf(c.App.Writer, "baseline %s (from %s) against the checkout in %s: medians of %d interleaved runs at -benchtime %s; ratio = current / baseline ns/op\n",
		name, base.From, root, a.count, a.benchtime)
	return writeRegressTable(c.App.Writer, rows)
}

// shortCommit is a commit id's first 12 digits.
func shortCommit(commit string) string { return commit[:min(12, len(commit))] }

// moduleRoot checks that dir holds the petrel module and returns it absolute.
func moduleRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	mod, err := os.ReadFile(filepath.Join(abs, "go.mod"))
	if err != nil || !strings.HasPrefix(strings.TrimSpace(string(mod)), "module github.com/petrel-broker/petrel\n") {
		return "", fmt.Errorf("%s is not the root of the petrel repository (no go.mod of github.com/petrel-broker/petrel); give --dir", abs)
	}
	return abs, nil
}

// regressSide is one tree whose benchmarks run: the current checkout or the baseline.
type regressSide struct {
	name string            // "current" or "baseline"
	tree string            // the tree's root
	bins map[string]string // test binary by package; "" where the tree lacks the package
	raw  strings.Builder   // every run's output, for --out
}

// build compiles the test binaries of benchmarks' packages into binDir, in one go
// command (which links them in parallel). A package missing from the tree has no
// binary: its benchmarks are new there.
func (s *regressSide) build(ctx context.Context, benchmarks []hotBenchmark, binDir string, progress *regressProgress) error {
	s.bins = map[string]string{}
	var pkgs []string
	for _, b := range benchmarks {
		if _, done := s.bins[b.Package]; done {
			continue
		}
		s.bins[b.Package] = ""
		if _, err := os.Stat(filepath.Join(s.tree, b.Package)); err == nil {
			pkgs = append(pkgs, b.Package)
		}
	}
	if len(pkgs) == 0 {
		return nil
	}
	progress.set(fmt.Sprintf("building the benchmarks of the %s (%s)", s.desc(), strings.Join(pkgs, " ")))
	dir := filepath.Join(binDir, s.name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// -trimpath: the build cache serves both trees' identical packages. -o names a
	// directory: each package's binary is its last element + ".test".
	cmd := exec.CommandContext(ctx, "go", append([]string{"test", "-c", "-trimpath", "-o", dir + string(filepath.Separator)}, pkgs...)...)
	cmd.Dir = s.tree
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the benchmarks of the %s: %w\n%s", s.desc(), err, strings.TrimSpace(string(out)))
	}
	for _, pkg := range pkgs {
		s.bins[pkg] = filepath.Join(dir, filepath.Base(pkg)+".test")
	}
	return nil
}

// desc names the side in messages.
func (s *regressSide) desc() string {
	if s.name == "current" {
		return "current checkout"
	}
	return s.name
}

// run runs benchmark b once (-benchtime benchtime) and returns its samples: none when
// this side lacks it.
func (s *regressSide) run(ctx context.Context, b hotBenchmark, benchtime string) ([]benchSample, error) {
	bin := s.bins[b.Package]
	if bin == "" {
		return nil, nil
	}
	out, err := runBenchmark(ctx, bin, filepath.Join(s.tree, b.Package), b, benchtime)
	s.raw.WriteString(out)
	if err != nil {
		return nil, fmt.Errorf("%s of the %s: %w", b.label(), s.desc(), err)
	}
	found, err := parseBenchOutput(strings.NewReader(out))
	return found[b.Name], err
}

// runBenchmark runs b alone from the test binary bin in dir, with allocations.
func runBenchmark(ctx context.Context, bin, dir string, b hotBenchmark, benchtime string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, "-test.run", "^$", "-test.bench", b.pattern(),
		"-test.benchtime", benchtime, "-test.count", "1", "-test.benchmem")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return string(out), ctx.Err()
	}
	if err != nil {
		return string(out), fmt.Errorf("%w\n%s", err, lastLines(string(out), 20))
	}
	return string(out), nil
}

// lastLines returns s's last n lines.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// regressProgress is what a regress run is doing, for the progress lines.
type regressProgress struct {
	start time.Time
	mu    sync.Mutex
	doing string // guarded by mu
}

func (p *regressProgress) set(doing string) {
	p.mu.Lock()
	p.doing = doing
	p.mu.Unlock()
}

func (p *regressProgress) line() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.doing + " (" + strconv.Itoa(int(time.Since(p.start).Seconds())) + " s)"
}
