package perf

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitRepo is a temporary git repository holding the petrel module's go.mod.
type gitRepo struct {
	t   *testing.T
	dir string
}

func newGitRepo(t *testing.T) *gitRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	r := &gitRepo{t: t, dir: t.TempDir()}
	r.git("init", "--quiet")
	r.write("go.mod", "module github.com/petrel-broker/petrel\n\ngo 1.26.0\n")
	r.commit("first")
	return r
}

// git runs git in the repository, without the user's configuration, and returns its
// output.
func (r *gitRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func (r *gitRepo) write(name, content string) {
	r.t.Helper()
	path := filepath.Join(r.dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// commit commits everything and returns the commit id.
func (r *gitRepo) commit(msg string) string {
	r.t.Helper()
	r.git("add", "-A")
	r.git("commit", "--quiet", "-m", msg)
	return r.git("rev-parse", "HEAD")
}

// The baseline is --baseline, else the newest v* tag by version order, else the
// revision recorded in docs/bench/regress-baseline; each resolves to its commit.
func TestResolveBaseline(t *testing.T) {
	ctx := context.Background()
	r := newGitRepo(t)
	first := r.git("rev-parse", "HEAD")

	if _, err := resolveBaseline(ctx, r.dir, ""); err == nil || !strings.Contains(err.Error(), "no baseline: give --baseline REV, tag a release v*, or record a revision in docs/bench/regress-baseline") {
		t.Fatalf("no baseline at all: %v", err)
	}
	r.write(BaselineFile, "# a comment\n\n"+first[:10]+"\n")
	second := r.commit("second")
	b, err := resolveBaseline(ctx, r.dir, "")
	if err != nil || b.Commit != first || b.From != BaselineFile || b.Rev != first[:10] {
		t.Fatalf("recorded: %+v, %v", b, err)
	}

	r.git("tag", "v0.9.0", first)
	r.git("tag", "v0.10.0", second) // newer by version, older by name
	r.git("tag", "other", first)
	b, err = resolveBaseline(ctx, r.dir, "")
	if err != nil || b.Commit != second || b.Rev != "v0.10.0" || b.From != "the newest v* tag" {
		t.Fatalf("tagged: %+v, %v", b, err)
	}

	b, err = resolveBaseline(ctx, r.dir, "HEAD~1")
	if err != nil || b.Commit != first || b.From != "--baseline" {
		t.Fatalf("flag: %+v, %v", b, err)
	}
	for _, rev := range []string{"no-such-rev", "--help", "HEAD~5"} {
		if _, err := resolveBaseline(ctx, r.dir, rev); err == nil || !strings.Contains(err.Error(), `unknown revision "`+rev+`" (from --baseline)`) {
			t.Errorf("%s: %v", rev, err)
		}
	}
}

func TestResolveBaseline_BadRecordedRevision(t *testing.T) {
	r := newGitRepo(t)
	r.write(BaselineFile, "# only comments\n")
	if _, err := resolveBaseline(context.Background(), r.dir, ""); err == nil || !strings.Contains(err.Error(), "records no revision") {
		t.Fatalf("empty file: %v", err)
	}
	r.write(BaselineFile, "0123456789abcdef\n")
	if _, err := resolveBaseline(context.Background(), r.dir, ""); err == nil || !strings.Contains(err.Error(), `unknown revision "0123456789abcdef" (from docs/bench/regress-baseline)`) {
		t.Fatalf("unknown recorded revision: %v", err)
	}
}

// The baseline's worktree holds the revision's files and is gone, unregistered, after
// remove.
func TestAddWorktree(t *testing.T) {
	ctx := context.Background()
	r := newGitRepo(t)
	first := r.git("rev-parse", "HEAD")
	r.write("segment/x.go", "package segment\n")
	r.commit("second")
	dir := filepath.Join(t.TempDir(), "baseline")
	remove, err := addWorktree(ctx, r.dir, dir, first)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("worktree without go.mod: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "segment")); !os.IsNotExist(err) {
		t.Fatalf("worktree of the wrong revision: %v", err)
	}
	remove()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("worktree left: %v", err)
	}
	if list := r.git("worktree", "list"); strings.Contains(list, dir) {
		t.Fatalf("worktree still registered: %s", list)
	}
}

func TestCheckoutRoot(t *testing.T) {
	r := newGitRepo(t)
	r.write("segment/x.go", "package segment\n")
	root, err := checkoutRoot(context.Background(), filepath.Join(r.dir, "segment"))
	if want, _ := filepath.EvalSymlinks(r.dir); err != nil || root != want {
		t.Fatalf("root %q, %v; want %q", root, err, want)
	}
	dir := t.TempDir()
	if _, err := checkoutRoot(context.Background(), dir); err == nil || !strings.Contains(err.Error(), dir+" is not a git checkout") {
		t.Fatalf("not a checkout: %v", err)
	}
}
