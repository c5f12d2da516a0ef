package main

import (
	"fmt"
	"os"
	"regexp"
	"testing"
)

// invariantLabel matches the start of one of DESIGN.md's invariants: a bullet whose bold
// text opens with a label such as "R3" or "T14".
var invariantLabel = regexp.MustCompile(`(?m)^\* \*\*([A-Z]+[0-9]+) `)

// duplicateLabels returns every invariant label of doc that more than one invariant
// uses, in the order of their second use.
func duplicateLabels(doc string) []string {
	seen := map[string]bool{}
	var dups []string
	for _, m := range invariantLabel.FindAllStringSubmatch(doc, -1) {
		if seen[m[1]] {
			dups = append(dups, m[1])
		}
		seen[m[1]] = true
	}
	return dups
}

// TestDesignInvariantLabelsAreUnique keeps every invariant label of DESIGN.md naming
// one invariant: code and docs cite them ("DESIGN.md R3"), so a label used twice makes
// such a citation ambiguous.
func TestDesignInvariantLabelsAreUnique(t *testing.T) {
	doc, err := os.ReadFile("DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(invariantLabel.FindAllString(string(doc), -1)); n < 50 {
		t.Fatalf("found %d invariant labels in DESIGN.md; the pattern no longer matches its bullets", n)
	}
	if dups := duplicateLabels(string(doc)); len(dups) > 0 {
		t.Errorf("DESIGN.md labels more than one invariant with each of %v", dups)
	}
}

func TestDuplicateLabelsFindsAReusedLabel(t *testing.T) {
	doc := "* **R1 one**\n* **R2 two**\n\n### Other\n\n* **R1 again**\n* not **R2 a label**\n"
	if got := fmt.Sprint(duplicateLabels(doc)); got != "[R1]" {
		t.Errorf("duplicateLabels = %s, want [R1]", got)
	}
}
