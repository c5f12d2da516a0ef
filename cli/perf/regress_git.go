package perf

// `petrel perf regress`'s baseline: which revision it is (--baseline, else the newest
// v* tag, else the revision recorded in docs/bench/regress-baseline), and a temporary
// git worktree of it to build the baseline's benchmarks in.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// BaselineFile is where the repository records the regression check's baseline
// revision while it has no release tag (`v*`), relative to the repository's root.
const BaselineFile = "docs/bench/regress-baseline"

// errNotCheckout is returned for a directory outside any git checkout.
var errNotCheckout = errors.New("not a git checkout")

// git runs git with args in dir and returns its standard output, trimmed; an error
// carries git's standard error.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), msg)
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(stdout.String()), nil
}

// checkoutRoot returns the root of the git checkout holding dir.
func checkoutRoot(ctx context.Context, dir string) (string, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return "", fmt.Errorf("git not found: petrel perf regress builds the baseline from a git worktree: %w", err)
	}
	root, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", fmt.Errorf("%s is %w (petrel perf regress compares a petrel repository with a baseline revision; give --dir)", dir, errNotCheckout)
	}
	return root, nil
}

// baseline is the resolved baseline revision.
type baseline struct {
	Rev    string // as given: a tag, a revision name or a commit
	Commit string // the full commit id
	From   string // where Rev came from: --baseline, the newest v* tag, or BaselineFile
}

// resolveBaseline returns the baseline of the checkout at root: flagRev when given,
// else the newest tag named v* (by version order), else the revision recorded in
// BaselineFile (its first line that is not empty or a # comment).
func resolveBaseline(ctx context.Context, root, flagRev string) (baseline, error) {
	b := baseline{Rev: flagRev, From: "--baseline"}
	if b.Rev == "" {
		tags, err := git(ctx, root, "tag", "--list", "v*", "--sort=-version:refname")
		if err != nil {
			return b, err
		}
		if tag, _, _ := strings.Cut(tags, "\n"); tag != "" {
			b.Rev, b.From = tag, "the newest v* tag"
		}
	}
	if b.Rev == "" {
		rev, err := recordedBaseline(filepath.Join(root, BaselineFile))
		if err != nil {
			return b, err
		}
		b.Rev, b.From = rev, BaselineFile
	}
	commit, err := git(ctx, root, "rev-parse", "--verify", "--quiet", "--end-of-options", b.Rev+"^{commit}")
	if err != nil || commit == "" {
		return b, fmt.Errorf("unknown revision %q (from %s) in %s", b.Rev, b.From, root)
	}
	b.Commit = commit
	return b, nil
}

// recordedBaseline reads the revision recorded in path.
func recordedBaseline(path string) (string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("no baseline: give --baseline REV, tag a release v*, or record a revision in %s", BaselineFile)
	}
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			return line, nil
		}
	}
	return "", fmt.Errorf("%s records no revision", path)
}

// addWorktree checks out commit in a new detached worktree of root at dir; remove
// deletes it (and unregisters it from root) again.
func addWorktree(ctx context.Context, root, dir, commit string) (remove func(), err error) {
	if _, err := git(ctx, root, "worktree", "add", "--detach", "--quiet", dir, commit); err != nil {
		return nil, err
	}
	return func() {
		// Not ctx: an interrupt must not leave the worktree registered.
		if _, err := git(context.Background(), root, "worktree", "remove", "--force", dir); err != nil {
			_ = os.RemoveAll(dir)
			_, _ = git(context.Background(), root, "worktree", "prune")
		}
	}, nil
}
