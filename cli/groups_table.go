package cli

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// column is one column of a kafka-consumer-groups.sh table: Kafka pads every column
// but the last to a width, either fixed (%-15s) or the longest value with a minimum.
type column struct {
	header string
	width  int  // the minimum (or fixed) width
	grow   bool // widen to the longest value, as Kafka does for names and ids
}

// table is rows of cells under columns, printed as Kafka's tool prints them: each
// cell left-aligned in its width, one space apart, the last column unpadded.
type table struct {
	columns []column
	rows    [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// write prints the header and the rows.
func (t *table) write(w *strings.Builder) {
	widths := make([]int, len(t.columns))
	for i, col := range t.columns {
		widths[i] = col.width
		if !col.grow {
			continue
		}
		widths[i] = max(widths[i], len(col.header))
		for _, r := range t.rows {
			widths[i] = max(widths[i], len(r[i]))
		}
	}
	line := func(cells []string) {
		for i, cell := range cells {
			if i == len(cells)-1 {
				w.WriteString(cell)
				break
			}
			fmt.Fprintf(w, "%-*s ", widths[i], cell)
		}
		w.WriteByte('\n')
	}
	headers := make([]string, len(t.columns))
	for i, col := range t.columns {
		headers[i] = col.header
	}
	line(headers)
	for _, r := range t.rows {
		line(r)
	}
}

// orDash prints an empty value as Kafka's tool does: "-".
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// offsetOrDash prints a known offset, or "-" for an unknown one (negative).
func offsetOrDash(o int64) string {
	if o < 0 {
		return "-"
	}
	return strconv.FormatInt(o, 10)
}

// formatAssignment prints partitions as Kafka's --members --verbose does:
// topic(0,1),other(2), topics sorted; "-" when empty.
func formatAssignment(partitions map[string][]int32) string {
	if len(partitions) == 0 {
		return "-"
	}
	topics := make([]string, 0, len(partitions))
	for t := range partitions {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	parts := make([]string, len(topics))
	for i, t := range topics {
		ps := append([]int32(nil), partitions[t]...)
		sort.Slice(ps, func(a, b int) bool { return ps[a] < ps[b] })
		parts[i] = t + "(" + joinIDs(ps) + ")"
	}
	return strings.Join(parts, ",")
}
