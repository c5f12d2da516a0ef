package perf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `petrel perf regress` refuses bad arguments and repositories it cannot compare with
// one line each, before it builds anything.
func TestPerfRegress_Errors(t *testing.T) {
	repo := newGitRepo(t)  // the petrel module's go.mod, one commit, no baseline
	plain := newGitRepo(t) // a git checkout of something else
	plain.write("go.mod", "module example.com/other\n")
	plain.commit("other")
	notGit := t.TempDir()
	allocs := filepath.Join(t.TempDir(), "allocs.txt")
	if err := os.WriteFile(allocs, []byte("segment.BenchmarkAppend 200x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"extra"}, "perf regress takes no arguments, got 1"},
		{[]string{"--count", "0"}, "bad --count 0"},
		{[]string{"--benchtime", "fast"}, `bad --benchtime "fast" (a duration such as 200ms, or Nx iterations such as 100x)`},
		{[]string{"--benchtime", "0x"}, `bad --benchtime "0x"`},
		{[]string{"--bench", "("}, "bad --bench: error parsing regexp"},
		{[]string{"--bench", "NoSuchBenchmark"}, `--bench "NoSuchBenchmark" matches none of the hot-path benchmarks (segment.BenchmarkAppend/16KiB, `},
		{[]string{"--check-allocs", "a", "--write-allocs", "b"}, "give --check-allocs or --write-allocs, not both"},
		{[]string{"--check-allocs", "a", "--baseline", "HEAD"}, "no --baseline or --bench"},
		{[]string{"--dir", notGit}, notGit + " is not a git checkout (petrel perf regress compares a petrel repository with a baseline revision; give --dir)"},
		{[]string{"--dir", plain.dir}, "is not the root of the petrel repository (no go.mod of github.com/petrel-broker/petrel); give --dir"},
		{[]string{"--dir", repo.dir}, "no baseline: give --baseline REV, tag a release v*, or record a revision in docs/bench/regress-baseline"},
		{[]string{"--dir", repo.dir, "--baseline", "v9.9.9"}, `unknown revision "v9.9.9" (from --baseline)`},
		{[]string{"--dir", repo.dir, "--check-allocs", filepath.Join(notGit, "missing.txt")}, "no such file or directory"},
		{[]string{"--dir", repo.dir, "--check-allocs", allocs}, allocs + `: line 1 "segment.BenchmarkAppend 200x": want BENCHMARK ITERATIONS ALLOCS/OP`},
		{[]string{"--dir", notGit, "--check-allocs", allocs}, notGit + " is not the root of the petrel repository"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			mustFail(t, tc.want, "", append([]string{"perf", "regress"}, tc.args...)...)
		})
	}
}
