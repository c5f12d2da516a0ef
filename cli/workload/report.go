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
		fmt.Fprintf(tw, "%s\t%d\t%s\n", k, r.Counts[k], r.result(k))
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
		{"aborted after a failed produce", r.AbortedFailed},
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

// result is a check's RESULT column: FAIL on a violation; "not checked" when the check
// had no input (the drain read no partition; the group never caught up); "ok so far"
// when it had part of it.
func (r *Report) result(k Kind) string {
	drainNone := r.Partitions > 0 && len(r.Unfinished) >= r.Partitions && r.Read == 0
	drainPart := len(r.Unfinished) > 0
	switch {
	case r.Counts[k] > 0:
		return "FAIL"
	case k == AbortedRead && !r.Transactions:
		return "ok (no transactions)"
	case (k == Backwards || k == NotDelivered) && r.Consumers == 0:
		return "ok (no consumers)"
	case k == NotDelivered && !r.Settled:
		return "not checked (the group did not reach the end offsets)"
	case k == Backwards || k == NotDelivered:
		return "ok"
	case k == AbortedRead && drainNone && r.Consumers > 0:
		return "ok so far (checked on the group's reads only)"
	case drainNone:
		return "not checked (the drain read nothing)"
	case drainPart:
		return "ok so far (drain unfinished)"
	}
	return "ok"
}
