package cli

// `petrel top`: a live view of the cluster in the style of htop, over the Kafka
// protocol (brokers, controller, partition leaders) and every broker's /metrics (rates,
// under-replicated partitions, partition growth). Rates are the difference of two
// scrapes. --once prints one snapshot as tables, for scripts.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	ucli "github.com/urfave/cli/v2"
)

// defaultMetricsPort is petrel server's --metrics-listen port (petrel dev: + node id).
const defaultMetricsPort = 9644

func topCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "top",
		Usage: "live view of brokers, throughput, requests and the busiest partitions",
		Description: "Reads the cluster over the Kafka protocol and every broker's /metrics. Metrics endpoints\n" +
			"come from --metrics; without it, each broker's host on port 9644, or 9644 + node id\n" +
			"where several brokers share a host (petrel dev's layout). q or Ctrl-C quits.",
		Flags: withClientFlags(
			&ucli.StringSliceFlag{Name: "metrics", Usage: "metrics endpoint host:port of a broker (repeatable; default: see above)"},
			&ucli.DurationFlag{Name: "interval", Usage: "refresh interval (and the sampling window of --once)", Value: time.Second},
			&ucli.BoolFlag{Name: "once", Usage: "print one snapshot as tables and exit"},
			&ucli.IntFlag{Name: "partitions", Usage: "how many of the busiest partitions to show", Value: 10},
		),
		Action: runTop,
	}
}

func runTop(c *ucli.Context) error {
	interval := c.Duration("interval")
	if interval <= 0 {
		return fmt.Errorf("--interval must be positive, got %s", interval)
	}
	for _, m := range c.StringSlice("metrics") {
		if _, _, err := net.SplitHostPort(m); err != nil {
			return fmt.Errorf("bad --metrics %q: want host:port", m)
		}
	}
	cl, err := newKafkaClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	src := &topSource{adm: cl.admin(), explicit: c.StringSlice("metrics"), timeout: cl.timeout,
		http: &http.Client{Timeout: min(cl.timeout, 5*time.Second)}}
	limit := max(c.Int("partitions"), 0)
	if c.Bool("once") {
		ctx, cancel := context.WithTimeout(c.Context, cl.timeout+interval+cl.timeout)
		defer cancel()
		first, err := src.sample(ctx)
		if err != nil {
			return cl.explain(err)
		}
		select {
		case <-time.After(interval):
		case <-ctx.Done():
			return ctx.Err()
		}
		second, err := src.sample(ctx)
		if err != nil {
			return cl.explain(err)
		}
		printTop(c.App.Writer, buildTopView(first, second, limit))
		return nil
	}
	return newTopUI(src, interval, limit, nil).run(c.Context)
}

// topSource gathers samples.
type topSource struct {
	adm      *kadm.Client
	explicit []string
	timeout  time.Duration
	http     *http.Client
}

// topSample is the cluster at one moment.
type topSample struct {
	at         time.Time
	meta       kadm.Metadata
	brokers    map[int32]*brokerScrape // by node id
	unreadable []string                // metrics endpoints that did not answer
}

// brokerScrape is one broker's /metrics, reduced to what top shows.
type brokerScrape struct {
	endpoint                      string
	bytesIn, bytesOut, requests   float64
	partitions, leaders, underRep float64
	ready                         bool
	logEnd, size                  map[topicPartition]float64
}

type topicPartition struct {
	topic     string
	partition int32
}

func (s *topSource) sample(ctx context.Context) (*topSample, error) {
	mctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	meta, err := s.adm.Metadata(mctx)
	if err != nil {
		return nil, err
	}
	out := &topSample{at: time.Now(), meta: meta, brokers: map[int32]*brokerScrape{}}
	for _, ep := range s.endpoints(meta) {
		bs, id, err := s.scrape(ctx, ep)
		if err != nil {
			out.unreadable = append(out.unreadable, ep)
			continue
		}
		out.brokers[id] = bs
	}
	return out, nil
}

// endpoints are --metrics, or each broker's host with the default port layout.
func (s *topSource) endpoints(meta kadm.Metadata) []string {
	if len(s.explicit) > 0 {
		return s.explicit
	}
	perHost := map[string]int{}
	for _, b := range meta.Brokers {
		perHost[b.Host]++
	}
	var out []string
	for _, b := range meta.Brokers {
		port := defaultMetricsPort
		if perHost[b.Host] > 1 {
			port += int(b.NodeID)
		}
		out = append(out, net.JoinHostPort(b.Host, strconv.Itoa(port)))
	}
	return out
}

// scrape reads one /metrics endpoint with the client library's parser.
func (s *topSource) scrape(ctx context.Context, endpoint string) (*brokerScrape, int32, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+endpoint+"/metrics", nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("%s: %s", endpoint, resp.Status)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, 0, err
	}
	info := fams["petrel_broker_info"]
	if info == nil || len(info.Metric) == 0 {
		return nil, 0, errors.New(endpoint + ": not a Petrel broker (no petrel_broker_info)")
	}
	id, err := strconv.ParseInt(label(info.Metric[0], "node_id"), 10, 32)
	if err != nil {
		return nil, 0, err
	}
	bs := &brokerScrape{endpoint: endpoint, logEnd: map[topicPartition]float64{}, size: map[topicPartition]float64{}}
	bs.bytesIn = sumWhere(fams["kafka_server_brokertopicmetrics_bytesin_total"], "topic", "")
	bs.bytesOut = sumWhere(fams["kafka_server_brokertopicmetrics_bytesout_total"], "topic", "")
	bs.requests = sumWhere(fams["kafka_network_requestmetrics_requests_total"], "", "")
	bs.partitions = sumWhere(fams["kafka_server_replicamanager_partitioncount"], "", "")
	bs.leaders = sumWhere(fams["kafka_server_replicamanager_leadercount"], "", "")
	bs.underRep = sumWhere(fams["kafka_server_replicamanager_underreplicatedpartitions"], "", "")
	bs.ready = sumWhere(fams["petrel_broker_ready"], "", "") == 1
	perPartition := func(name string, into map[topicPartition]float64) {
		if f := fams[name]; f != nil {
			for _, m := range f.Metric {
				p, err := strconv.ParseInt(label(m, "partition"), 10, 32)
				if err == nil {
					into[topicPartition{label(m, "topic"), int32(p)}] = metricValue(m)
				}
			}
		}
	}
	perPartition("kafka_log_log_logendoffset", bs.logEnd)
	perPartition("kafka_log_log_size", bs.size)
	return bs, int32(id), nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	return 0
}

// sumWhere adds a family's series whose label name has value (name "" adds all).
func sumWhere(f *dto.MetricFamily, name, value string) float64 {
	if f == nil {
		return 0
	}
	var sum float64
	for _, m := range f.Metric {
		if name == "" || label(m, name) == value {
			sum += metricValue(m)
		}
	}
	return sum
}

// topView is what top shows, as table rows.
type topView struct {
	summary    string
	brokers    [][]string // with a header row
	partitions [][]string // with a header row
	warnings   []string
}

// buildTopView computes rates between two samples.
func buildTopView(prev, cur *topSample, limit int) topView {
	secs := cur.at.Sub(prev.at).Seconds()
	if secs <= 0 {
		secs = 1
	}
	rate := func(a, b float64) float64 { return max(b-a, 0) / secs }
	meta := cur.meta
	var topics, partitions, offline int
	leaderOf := map[topicPartition]int32{}
	for _, t := range meta.Topics {
		if t.IsInternal {
			continue
		}
		topics++
		for _, p := range t.Partitions {
			partitions++
			if p.Leader < 0 {
				offline++
			}
			leaderOf[topicPartition{t.Topic, p.Partition}] = p.Leader
		}
	}
	var urp float64
	for _, b := range cur.brokers {
		urp += b.underRep
	}
	// Topics and partitions are the users' (internal topics left out); under-replicated
	// counts every partition, as the brokers report it.
	v := topView{summary: fmt.Sprintf("cluster %s  controller %d  brokers %d  topics %d  partitions %d  under-replicated %.0f  offline %d",
		meta.Cluster, meta.Controller, len(meta.Brokers), topics, partitions, urp, offline)}
	v.brokers = [][]string{{"BROKER", "ADDRESS", "CTRL", "IN MB/s", "OUT MB/s", "REQ/s", "PARTITIONS", "LEADERS", "URP", "READY"}}
	brokers := append(kadm.BrokerDetails(nil), meta.Brokers...)
	sort.Slice(brokers, func(i, j int) bool { return brokers[i].NodeID < brokers[j].NodeID })
	for _, b := range brokers {
		id := b.NodeID
		row := []string{strconv.Itoa(int(id)), net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), "", "-", "-", "-", "-", "-", "-", "-"}
		if id == meta.Controller {
			row[2] = "*"
		}
		c, p := cur.brokers[id], prev.brokers[id]
		if c != nil && p != nil {
			row[3] = fmt.Sprintf("%.2f", rate(p.bytesIn, c.bytesIn)/1e6)
			row[4] = fmt.Sprintf("%.2f", rate(p.bytesOut, c.bytesOut)/1e6)
			row[5] = fmt.Sprintf("%.0f", rate(p.requests, c.requests))
			row[6], row[7], row[8] = fmt.Sprintf("%.0f", c.partitions), fmt.Sprintf("%.0f", c.leaders), fmt.Sprintf("%.0f", c.underRep)
			row[9] = "no"
			if c.ready {
				row[9] = "yes"
			}
		}
		v.brokers = append(v.brokers, row)
	}
	type busy struct {
		tp     topicPartition
		leader int32
		rate   float64
		size   float64
	}
	var all []busy
	for tp, leader := range leaderOf {
		c, p := cur.brokers[leader], prev.brokers[leader]
		if c == nil || p == nil {
			continue
		}
		end, ok1 := c.logEnd[tp]
		before, ok2 := p.logEnd[tp]
		if !ok1 || !ok2 {
			continue
		}
		all = append(all, busy{tp, leader, rate(before, end), c.size[tp]})
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
	for _, b := range all[:min(limit, len(all))] {
		v.partitions = append(v.partitions, []string{b.tp.topic, strconv.Itoa(int(b.tp.partition)), strconv.Itoa(int(b.leader)),
			fmt.Sprintf("%.0f", b.rate), fmt.Sprintf("%.2f", b.size/1e6)})
	}
	for _, ep := range cur.unreadable {
		v.warnings = append(v.warnings, "metrics endpoint "+ep+" did not answer (use --metrics host:port)")
	}
	return v
}

// printTop writes a view as tab-aligned tables.
func printTop(w io.Writer, v topView) {
	fmt.Fprintln(w, v.summary)
	fmt.Fprintln(w)
	table := func(rows [][]string) {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, r := range rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		tw.Flush()
	}
	table(v.brokers)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "BUSIEST PARTITIONS")
	table(v.partitions)
	for _, warn := range v.warnings {
		fmt.Fprintln(w, "warning: "+warn)
	}
}
