package integration

// The documents' walk-throughs, run as written (runWalkthrough): docs/security.md's
// "SASL_SSL with ACLs" here, docs/tiered-storage.md's worked example in
// tiered_docs_test.go. The fenced
// blocks after `<!-- walkthrough:KIND [ARG] -->` comments are the steps, in document
// order. Kinds: run (a shell block, must succeed), wait (a shell block, repeated until
// it succeeds and its output shows what the next output block lists), fails (a shell
// block that must fail), file NAME (the block is written to NAME), output (each line
// must appear in the previous shell block's output, whitespace runs compared as one
// space, in any order) and absent (no line may appear there). Every 127.0.0.1:PORT of
// the section is replaced, everywhere in it, by a port free now; blocks run with bash
// in a temporary directory, with the built petrel first in PATH. Every process a block
// leaves running is killed at the end (each block runs in its own process group).

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// walkStep is one marked block of the walk-through.
type walkStep struct {
	kind, arg string
	body      string
	line      int // where the block starts in the document
}

// walkMarker is the comment before a step's block.
var walkMarker = regexp.MustCompile(`^<!-- walkthrough:([a-z]+)(?: (\S+))? -->$`)

// parseWalkthrough returns the marked blocks of doc in order. A marker must be followed
// (after blank lines) by a fenced block.
func parseWalkthrough(doc string) ([]walkStep, error) {
	var steps []walkStep
	sc := bufio.NewScanner(strings.NewReader(doc))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	lineNo := 0
	var pending *walkStep
	var inBlock bool
	var body []string
	for sc.Scan() {
		line := sc.Text()
		lineNo++
		switch {
		case inBlock && strings.HasPrefix(line, "```"):
			pending.body = strings.Join(body, "\n") + "\n"
			steps = append(steps, *pending)
			pending, inBlock, body = nil, false, nil
		case inBlock:
			body = append(body, line)
		case pending != nil && strings.HasPrefix(line, "```"):
			inBlock, pending.line = true, lineNo+1
		case pending != nil && strings.TrimSpace(line) != "":
			return nil, fmt.Errorf("line %d: walkthrough marker not followed by a fenced block", lineNo)
		default:
			if m := walkMarker.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
				pending = &walkStep{kind: m[1], arg: m[2]}
			}
		}
	}
	if pending != nil {
		return nil, fmt.Errorf("walkthrough marker at the end without a block")
	}
	return steps, sc.Err()
}

// normalizeSpace collapses runs of white space into one space.
func normalizeSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// walkOutputLines are the expected lines of an output or absent block.
func walkOutputLines(body string) []string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if l = normalizeSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// missingLines returns the lines of want that output does not contain.
func missingLines(output string, want []string) []string {
	var lines []string
	for _, l := range strings.Split(output, "\n") {
		lines = append(lines, normalizeSpace(l))
	}
	var missing []string
	for _, w := range want {
		found := false
		for _, l := range lines {
			if strings.Contains(l, w) {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, w)
		}
	}
	return missing
}

func TestParseWalkthrough(t *testing.T) {
	t.Parallel()
	steps, err := parseWalkthrough("x\n<!-- walkthrough:file a.txt -->\n\n```properties\nk=v\n```\n<!-- walkthrough:run -->\n```sh\necho hi\n```\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 || steps[0].kind != "file" || steps[0].arg != "a.txt" || steps[0].body != "k=v\n" ||
		steps[1].kind != "run" || steps[1].body != "echo hi\n" {
		t.Fatalf("%+v", steps)
	}
	if _, err := parseWalkthrough("<!-- walkthrough:run -->\ntext\n```sh\n```\n"); err == nil {
		t.Fatal("a marker without its block was accepted")
	}
	if m := missingLines("Brokers:\t  3\nx", []string{"Brokers: 3", "y"}); len(m) != 1 || m[0] != "y" {
		t.Fatalf("missingLines: %q", m)
	}
}

// TestSecurity_Walkthrough runs docs/security.md's walk-through "SASL_SSL with ACLs".
func TestSecurity_Walkthrough(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"openssl", "kcat", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not installed, and CI is set: .ci/run must install it: %v", tool, err)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
	runWalkthrough(t, "security.md", "## Walk-through: SASL_SSL with ACLs", 10, []string{"node0.log", "node1.log", "node2.log"})
}

// runWalkthrough runs the walk-through of docs/<docName> in the section that starts at
// heading (to the next "## " heading), which must have at least minSteps marked blocks;
// logs are the files of the shell's directory whose last lines a failure shows (and
// that must not say "address already in use"); pathDirs go first in PATH after the
// built petrel's.
func runWalkthrough(t *testing.T, docName, heading string, minSteps int, logs []string, pathDirs ...string) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "docs", docName))
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, heading)
	if start < 0 {
		t.Fatalf("docs/%s has no section %q", docName, heading)
	}
	section := text[start:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	steps, err := parseWalkthrough(section)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) < minSteps {
		t.Fatalf("the walk-through has %d marked blocks", len(steps))
	}

	// The section's ports, each replaced by a free one.
	var docPorts []string
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`127\.0\.0\.1:(\d+)`).FindAllStringSubmatch(section, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			docPorts = append(docPorts, m[1])
		}
	}
	free, err := procFreePorts(len(docPorts))
	if err != nil {
		t.Fatal(err)
	}
	var pairs []string
	for i, p := range docPorts {
		pairs = append(pairs, p, strconv.Itoa(free[i]))
	}
	portRe := regexp.MustCompile(`\b(` + strings.Join(docPorts, "|") + `)\b`)
	mapping := map[string]string{}
	for i := 0; i < len(pairs); i += 2 {
		mapping[pairs[i]] = pairs[i+1]
	}
	withPorts := func(s string) string {
		return portRe.ReplaceAllStringFunc(s, func(p string) string { return mapping[p] })
	}

	bin := procBuildPetrel(t)
	sh := newDocsShell(t, bin, logs)
	dir, env := sh.dir, sh.env
	for _, d := range pathDirs {
		for i, e := range env {
			if strings.HasPrefix(e, "PATH=") {
				env[i] = "PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + d + string(os.PathListSeparator) + strings.TrimPrefix(e, "PATH=")
			}
		}
	}
	// runShell runs one block and returns its combined output and error.
	runShell := func(step walkStep, timeout time.Duration) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "-e", "-c", withPorts(step.body))
		cmd.Dir, cmd.Env = dir, env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.WaitDelay = 2 * time.Second
		if err := cmd.Start(); err != nil {
			return "", err
		}
		sh.groups = append(sh.groups, cmd.Process.Pid)
		err := cmd.Wait()
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (timed out after %s)", err, timeout)
		}
		return out.String(), err
	}

	deadline := time.Now().Add(90 * time.Second)
	var last string
	var lastStep walkStep
	for i, step := range steps {
		where := fmt.Sprintf("docs/%s block at line %d of the walk-through (%s)", docName, step.line, step.kind)
		switch step.kind {
		case "file":
			if err := os.WriteFile(filepath.Join(dir, step.arg), []byte(withPorts(step.body)), 0o600); err != nil {
				t.Fatal(err)
			}
		case "run", "fails":
			out, err := runShell(step, 60*time.Second)
			if step.kind == "run" && err != nil {
				t.Fatalf("%s: %v\n%s\n--- output:\n%s", where, err, step.body, out)
			}
			if step.kind == "fails" && err == nil {
				t.Fatalf("%s succeeded:\n%s\n--- output:\n%s", where, step.body, out)
			}
			last, lastStep = out, step
		case "wait":
			var want []string
			if i+1 < len(steps) && steps[i+1].kind == "output" {
				want = walkOutputLines(withPorts(steps[i+1].body))
			}
			for {
				out, err := runShell(step, 15*time.Second)
				if err == nil && len(missingLines(out, want)) == 0 {
					last, lastStep = out, step
					break
				}
				for _, name := range logs {
					if b, _ := os.ReadFile(filepath.Join(dir, name)); bytes.Contains(b, []byte("address already in use")) {
						t.Fatalf("%s: could not bind a port chosen free a moment before (another process took it)", name)
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: not done by the deadline: %v\n--- output:\n%s", where, err, out)
				}
				time.Sleep(250 * time.Millisecond)
			}
		case "output":
			if m := missingLines(last, walkOutputLines(withPorts(step.body))); len(m) > 0 {
				t.Fatalf("%s: the output of the block at line %d lacks %q:\n%s", where, lastStep.line, m, last)
			}
		case "absent":
			for _, l := range walkOutputLines(withPorts(step.body)) {
				if len(missingLines(last, []string{l})) == 0 {
					t.Fatalf("%s: the output of the block at line %d shows %q:\n%s", where, lastStep.line, l, last)
				}
			}
		default:
			t.Fatalf("%s: unknown kind %q", where, step.kind)
		}
	}
}

// docsShell is a temporary directory where a document's commands run with the built
// petrel first in PATH, each in a process group of its own (groups). At cleanup every
// group is killed and, when the test failed, the last lines of the named logs in the
// directory are logged.
type docsShell struct {
	dir    string
	env    []string
	groups []int
}

func newDocsShell(t *testing.T, bin string, logs []string) *docsShell {
	sh := &docsShell{dir: t.TempDir(),
		env: append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))}
	t.Cleanup(func() {
		for _, pgid := range sh.groups {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
		// Wait (briefly) until they are dead, so none writes into dir as it is removed.
		for end := time.Now().Add(5 * time.Second); liveInGroups(sh.groups) && time.Now().Before(end); {
			time.Sleep(20 * time.Millisecond)
		}
		if t.Failed() {
			for _, name := range logs {
				if b, err := os.ReadFile(filepath.Join(sh.dir, name)); err == nil {
					t.Logf("%s (last lines):\n%s", name, tailLines(string(b), 25))
				}
			}
		}
	})
	return sh
}

// tailLines is the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// liveInGroups reports whether a process of one of the process groups is still alive
// (neither gone nor a zombie), from /proc; without /proc it reports false.
func liveInGroups(groups []int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, so split after its ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		pgrp, _ := strconv.Atoi(f[2])
		for _, g := range groups {
			if pgrp == g {
				return true
			}
		}
	}
	return false
}
