package main

import (
	"os"
	"strings"
	"testing"
)

// readmeTestIntro is the README line that introduces the whole suite's command.
const readmeTestIntro = "Run the whole test suite"

// readmeTestCommand is the command README.md gives for the whole suite: the first
// indented line after readmeTestIntro.
func readmeTestCommand(readme string) string {
	_, after, found := strings.Cut(readme, readmeTestIntro)
	if !found {
		return ""
	}
	for _, line := range strings.Split(after, "\n") {
		if strings.HasPrefix(line, "    ") && strings.TrimSpace(line) != "" {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// TestCIRunsTheREADMETestCommand: .ci/run runs, as a line of its own, exactly the test
// command README.md gives, so that what a contributor runs is what CI runs (same flags,
// same timeout).
func TestCIRunsTheREADMETestCommand(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	cmd := readmeTestCommand(string(readme))
	if !strings.HasPrefix(cmd, "go test ") {
		t.Fatalf("README.md: no `go test` command indented after %q (found %q)", readmeTestIntro, cmd)
	}
	ci, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	var tests []string
	for _, line := range strings.Split(string(ci), "\n") {
		line = strings.TrimSpace(line)
		if line == cmd {
			return
		}
		if strings.HasPrefix(line, "go test ") && !strings.Contains(line, "-fuzz") {
			tests = append(tests, line)
		}
	}
	t.Errorf(".ci/run does not run README.md's test command %q; its go test lines: %q", cmd, tests)
}
