package workload

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteTable prints the report: what ran, one line per check, the counts, then up to
// MaxExamples examples of each violation and the notes.
func (r *Report) WriteTable(w io.Writer) error {
	txn := "off"
	if r.Transactions {
		txn = "on"
	}
	fmt.Fprintf(w, "run %s: topic %s (%d partitions), %d producers, %d consumers in group %s, transactions %s\n",
		r.Run, r.Topic, r.Partitions, r.Producers, r.Consumers, r.Group, txn)
	status := "completed"
	if r.Interrupted {
		status = "interrupted: a partial run"
	}
	fmt.Fprintf(w, "produced for %s (%s); %d of %d faults run\n\n", r.Elapsed.Round(100*time.Millisecond), status, len(r.Faults), len(r.Faults)+r.FaultsSkipped)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tVIOLATIONS\tRESULT")
	for _, k := range Kinds() {
		result := "ok"
		switch {
		case r.Counts[k] > 0:
			result = "FAIL"
		case k == AbortedRead && !r.Transactions:
			result = "ok (no transactions)"
		case k == Backwards && r.Consumers == 0:
			result = "ok (no consumers)"
		case k == Lost && r.Unchecked > 0:
			result = "ok so far (drain unfinished)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", k, r.Counts[k], result)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COUNT\tRECORDS")
	counts := []struct {
		name string
		n    int
	}{
		{"produced", r.Produced},
		{"acknowledged", r.Acknowledged},
		{"aborted on purpose", r.Aborted},
		{"unacknowledged", r.Unacknowledged},
		{"unacknowledged but read", r.UnackedRead},
		{"read by the drain", r.Read},
		{"read by the group", r.GroupRead},
		{"offset commits", r.Commits},
	}
	if r.Unchecked > 0 {
		counts = append(counts, struct {
			name string
			n    int
		}{"acknowledged, not checked", r.Unchecked})
	}
	for _, c := range counts {
		fmt.Fprintf(tw, "%s\t%d\n", c.name, c.n)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, k := range Kinds() {
		if r.Counts[k] == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s (%d; the first %d):\n", k, r.Counts[k], len(r.Examples[k]))
		for _, e := range r.Examples[k] {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
	if len(r.Unfinished) > 0 {
		ps := make([]int32, 0, len(r.Unfinished))
		for p := range r.Unfinished {
			ps = append(ps, p)
		}
		slices.Sort(ps)
		var parts []string
		for _, p := range ps {
			parts = append(parts, fmt.Sprintf("%d (at offset %d)", p, r.Unfinished[p]))
		}
		fmt.Fprintf(w, "\nthe drain did not reach the end of partitions %s\n", strings.Join(parts, ", "))
	}
	if len(r.Notes) > 0 {
		fmt.Fprintf(w, "\nnotes:\n")
		for _, n := range r.Notes {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
	_, err := fmt.Fprintf(w, "\n%d violations\n", r.Violations())
	return err
}
