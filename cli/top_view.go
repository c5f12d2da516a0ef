package cli

// What `petrel top` shows, computed from two samples: pure functions of the samples,
// shared by the screen and --once. Every figure counts internal partitions
// (__consumer_offsets, __transaction_state) the same way: the summary's partitions,
// under-replicated and offline partitions, and each broker's partitions, leaders and
// under-replicated partitions all include them. The broker table fits 80 columns.

import (
	"fmt"
	"io"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"
)

// topLimits bounds the view's lists.
type topLimits struct {
	partitions int // busiest partitions shown
	groups     int // consumer groups shown, by lag
}

// Broker states in the STATE column.
const (
	stateUp      = "up"   // ready: caught up, unfenced, replicas open
	stateWaiting = "wait" // registered and unfenced but not ready yet (starting, catching up)
	stateDown    = "DOWN" // fenced, no longer registered, or its listener refuses connections
	stateUnknown = "n/a"  // registered and reachable, but its metrics did not answer
)

// topView is what top shows, as text rows.
type topView struct {
	summary    []string   // two lines
	legend     string     // what the broker columns mean
	brokers    [][]string // with a header row
	groups     [][]string // with a header row
	partitions [][]string // with a header row
	warnings   []string
}

// brokerColumnsRight are the broker table's right-aligned (numeric) columns.
var brokerColumnsRight = []bool{false, false, false, true, true, true, true, true, true, true}

// buildTopView computes rates and latency percentiles between two samples.
func buildTopView(prev, cur *topSample, limits topLimits) topView {
	secs := cur.at.Sub(prev.at).Seconds()
	if secs <= 0 {
		secs = 1
	}
	rate := func(a, b float64) float64 { return max(b-a, 0) / secs }

	var topics, partitions, internalPartitions, underReplicated, offline int
	leaderOf := map[topicPartition]int32{}
	for _, t := range cur.topics {
		topics++
		for _, p := range t.partitions {
			partitions++
			if t.internal {
				internalPartitions++
			}
			if len(p.ISR) < len(p.Replicas) {
				underReplicated++
			}
			if p.Leader < 0 {
				offline++
			}
			leaderOf[topicPartition{t.name, p.Partition}] = p.Leader
		}
	}
	ids := sortedIDs(cur.brokers)
	down := 0
	states := map[int32]string{}
	for _, id := range ids {
		states[id] = brokerState(cur.brokers[id], cur.scrapes[id])
		if states[id] == stateDown {
			down++
		}
	}
	brokers := fmt.Sprintf("brokers %d", len(ids))
	if down > 0 {
		brokers += fmt.Sprintf(" (%d down)", down)
	}
	controller := "none"
	if cur.controller >= 0 {
		controller = strconv.Itoa(int(cur.controller))
	}
	v := topView{
		summary: []string{
			fmt.Sprintf("cluster %s  controller %s  %s", cur.clusterID, controller, brokers),
			fmt.Sprintf("topics %d, partitions %d (%d internal), under-replicated %d, offline %d",
				topics, partitions, internalPartitions, underReplicated, offline),
		},
		legend: "per second; LEADERS: led/hosted; PRODUCE, FETCH: p99 request time",
	}

	v.brokers = [][]string{{"ID", "ADDRESS", "STATE", "IN/s", "OUT/s", "REQ/s", "LEADERS", "URP", "PRODUCE", "FETCH"}}
	for _, id := range ids {
		b := cur.brokers[id]
		name := strconv.Itoa(int(id))
		if id == cur.controller {
			name += "*"
		}
		row := []string{name, shortAddress(b.address), states[id], "-", "-", "-", "-", "-", "-", "-"}
		c, p := cur.scrapes[id], prev.scrapes[id]
		if c != nil && states[id] != stateDown {
			row[6] = fmt.Sprintf("%.0f/%.0f", c.leaders, c.partitions)
			row[7] = fmt.Sprintf("%.0f", c.underRep)
			if p != nil {
				row[3] = formatBytes(rate(p.bytesIn, c.bytesIn))
				row[4] = formatBytes(rate(p.bytesOut, c.bytesOut))
				row[5] = formatCount(rate(p.requests, c.requests))
				row[8] = formatMillis(quantileBetween(p.latency["Produce"], c.latency["Produce"], 0.99))
				row[9] = formatMillis(quantileBetween(p.latency["Fetch"], c.latency["Fetch"], 0.99))
			}
		}
		v.brokers = append(v.brokers, row)
	}

	// Consumer groups: each group's lag from its coordinator's metrics.
	type groupLag struct {
		group       string
		lag         float64
		coordinator int32
	}
	lags := map[string]groupLag{}
	for _, id := range ids {
		c := cur.scrapes[id]
		if c == nil {
			continue
		}
		for g, lag := range c.groupLag {
			if old, ok := lags[g]; !ok || lag > old.lag {
				lags[g] = groupLag{g, lag, id}
			}
		}
	}
	var groups []groupLag
	for _, g := range lags {
		groups = append(groups, g)
	}
	sort.Slice(groups, func(i, j int) bool {
		if groups[i].lag != groups[j].lag {
			return groups[i].lag > groups[j].lag
		}
		return groups[i].group < groups[j].group
	})
	v.groups = [][]string{{"GROUP", "LAG", "COORDINATOR"}}
	for _, g := range groups[:min(limits.groups, len(groups))] {
		v.groups = append(v.groups, []string{clip(g.group, 40), fmt.Sprintf("%.0f", g.lag), strconv.Itoa(int(g.coordinator))})
	}

	type busy struct {
		tp     topicPartition
		leader int32
		rate   float64
		size   float64
	}
	var all []busy
	for tp, leader := range leaderOf {
		c, p := cur.scrapes[leader], prev.scrapes[leader]
		if c == nil || p == nil {
			continue
		}
		end, ok1 := c.logEnd[tp]
		before, ok2 := p.logEnd[tp]
		if !ok1 || !ok2 {
			continue
		}
		if r := rate(before, end); r > 0 { // busiest: only partitions written to in the window
			all = append(all, busy{tp, leader, r, c.size[tp]})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].rate != all[j].rate {
			return all[i].rate > all[j].rate
		}
		if all[i].tp.topic != all[j].tp.topic {
			return all[i].tp.topic < all[j].tp.topic
		}
		return all[i].tp.partition < all[j].tp.partition
	})
	v.partitions = [][]string{{"TOPIC", "PARTITION", "LEADER", "RECORDS/s", "SIZE MB"}}
	for _, b := range all[:min(limits.partitions, len(all))] {
		v.partitions = append(v.partitions, []string{clip(b.tp.topic, 40), strconv.Itoa(int(b.tp.partition)), strconv.Itoa(int(b.leader)),
			fmt.Sprintf("%.0f", b.rate), fmt.Sprintf("%.2f", b.size/1e6)})
	}
	for _, ep := range cur.unreadable {
		v.warnings = append(v.warnings, "no answer from metrics endpoint "+ep+" (see --metrics)")
	}
	return v
}

// brokerState is the STATE column.
func brokerState(b *topBroker, scrape *brokerScrape) string {
	switch {
	case b.fenced || !b.registered || b.unreachable:
		return stateDown
	case scrape == nil:
		return stateUnknown
	case !scrape.ready:
		return stateWaiting
	}
	return stateUp
}

func sortedIDs(brokers map[int32]*topBroker) []int32 {
	ids := make([]int32, 0, len(brokers))
	for id := range brokers {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// quantileBetween is the q-quantile of the observations made between two cumulative
// histograms (Prometheus's histogram_quantile: linear within a bucket; the largest
// finite bound for the +Inf bucket). NaN when nothing was observed in between.
func quantileBetween(prev, cur histogram, q float64) float64 {
	if len(cur.bounds) == 0 || cur.count <= prev.count {
		return math.NaN()
	}
	counts := make([]float64, len(cur.counts))
	for i := range cur.counts {
		counts[i] = float64(cur.counts[i])
		if len(prev.counts) == len(cur.counts) {
			counts[i] -= float64(prev.counts[i])
		}
	}
	total := float64(cur.count - prev.count)
	if len(prev.counts) != len(cur.counts) {
		total = float64(cur.count)
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for i, upper := range cur.bounds {
		if counts[i] >= rank {
			if math.IsInf(upper, 1) {
				return lower
			}
			inBucket := counts[i] - below
			if inBucket <= 0 {
				return upper
			}
			return lower + (upper-lower)*(rank-below)/inBucket
		}
		lower, below = upper, counts[i]
	}
	// Every observation above the last finite bound (no +Inf bucket listed).
	return lower
}

// formatBytes prints a byte rate in at most 5 characters: 512, 950K, 2.1M, 123M, 1.2G.
func formatBytes(b float64) string {
	switch {
	case b < 1e3:
		return fmt.Sprintf("%.0f", b)
	case b < 1e6:
		return fmt.Sprintf("%.0fK", b/1e3)
	case b < 1e8:
		return fmt.Sprintf("%.1fM", b/1e6)
	case b < 1e9:
		return fmt.Sprintf("%.0fM", b/1e6)
	}
	return fmt.Sprintf("%.1fG", b/1e9)
}

// formatCount prints a rate in at most 5 characters: 316, 12345, 123k.
func formatCount(n float64) string {
	if n < 99999.5 {
		return fmt.Sprintf("%.0f", n)
	}
	return fmt.Sprintf("%.0fk", n/1e3)
}

// formatMillis prints a latency in at most 5 characters: 0.4ms, 2.5ms, 250ms, 1.2s; "-"
// for none.
func formatMillis(ms float64) string {
	switch {
	case math.IsNaN(ms):
		return "-"
	case ms < 9.95:
		return fmt.Sprintf("%.1fms", ms)
	case ms < 999.5:
		return fmt.Sprintf("%.0fms", ms)
	case ms < 99950:
		return fmt.Sprintf("%.1fs", ms/1e3)
	}
	return fmt.Sprintf("%.0fs", ms/1e3)
}

// shortAddress keeps an address within 17 characters, cutting the middle of a long
// host name; "-" when unknown.
func shortAddress(addr string) string {
	if addr == "" {
		return "-"
	}
	const width = 17
	if len(addr) <= width {
		return addr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || len(port)+3 >= width {
		return clip(addr, width)
	}
	keep := width - len(port) - 2 // host part, "…" and ":"
	return host[:keep/2] + "…" + host[len(host)-(keep-keep/2):] + ":" + port
}

// clip cuts s to n characters, ending in "…".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// printTop writes a view as plain text: the summary, then aligned tables (numbers
// right-aligned), two spaces between columns.
func printTop(w io.Writer, v topView) error {
	var b strings.Builder
	for _, line := range v.summary {
		b.WriteString(line + "\n")
	}
	b.WriteString("\nBROKERS  " + v.legend + "\n")
	writeAligned(&b, v.brokers, brokerColumnsRight)
	if len(v.groups) > 1 {
		b.WriteString("\nCONSUMER GROUPS\n")
		writeAligned(&b, v.groups, []bool{false, true, true})
	}
	b.WriteString("\nBUSIEST PARTITIONS\n")
	writeAligned(&b, v.partitions, []bool{false, true, true, true, true})
	for _, warn := range v.warnings {
		b.WriteString("warning: " + warn + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeAligned writes rows as columns two spaces apart; right[i] right-aligns column i.
// The last column is not padded when left-aligned.
func writeAligned(b *strings.Builder, rows [][]string, right []bool) {
	widths := map[int]int{}
	for _, r := range rows {
		for i, cell := range r {
			widths[i] = max(widths[i], displayWidth(cell))
		}
	}
	for _, r := range rows {
		var line strings.Builder
		for i, cell := range r {
			if i > 0 {
				line.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-displayWidth(cell))
			switch {
			case i < len(right) && right[i]:
				line.WriteString(pad + cell)
			case i == len(r)-1:
				line.WriteString(cell)
			default:
				line.WriteString(cell + pad)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
}

// displayWidth counts runes (every character top prints is one column wide).
func displayWidth(s string) int { return len([]rune(s)) }
