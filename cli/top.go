package cli

// `petrel top`: a live view of the cluster in the style of htop, over the Kafka
// protocol (Metadata and DescribeCluster: brokers, fenced ones included, partitions,
// the controller) and every broker's /metrics (rates, request latency, partition
// counts, consumer group lag). Rates and latency percentiles are taken between two
// scrapes. --once prints one snapshot as plain text and exits; the screen needs a
// terminal. The view is built in top_view.go, drawn in top_ui.go.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	ucli "github.com/urfave/cli/v2"
)

// defaultMetricsPort is petrel server's --metrics-listen port (petrel dev: + node id).
const defaultMetricsPort = 9644

// errNoTerminal is top's answer when its output is not a terminal.
var errNoTerminal = errors.New("petrel top needs a terminal; use --once for a plain-text snapshot")

func topCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "top",
		Usage: "live view of brokers, throughput, latency, consumer lag and the busiest partitions",
		Description: "Reads the cluster over the Kafka protocol and every broker's /metrics. Metrics endpoints\n" +
			"come from --metrics; without it, each broker's host on port 9644, or 9644 + node id\n" +
			"where several brokers share a host (petrel dev's layout). q or Ctrl-C quits.\n" +
			"--once prints one snapshot as plain text (rates over --interval) and exits.",
		Flags: withClientFlags(
			&ucli.StringSliceFlag{Name: "metrics", Usage: "metrics endpoint host:port of a broker (repeatable or comma-separated; default: see above)"},
			&ucli.DurationFlag{Name: "interval", Usage: "refresh interval (and the sampling window of --once)", Value: time.Second},
			&ucli.BoolFlag{Name: "once", Usage: "print one snapshot as plain text and exit"},
			&ucli.IntFlag{Name: "partitions", Usage: "how many of the busiest partitions to show", Value: 10},
			&ucli.IntFlag{Name: "groups", Usage: "how many consumer groups to show, by lag", Value: 10},
		),
		Action: runTop,
	}
}

func runTop(c *ucli.Context) error {
	if _, err := commandArgs(c); err != nil {
		return err
	}
	interval := c.Duration("interval")
	if interval <= 0 {
		return fmt.Errorf("--interval must be positive, got %s", interval)
	}
	for _, m := range c.StringSlice("metrics") {
		if _, _, err := net.SplitHostPort(m); err != nil {
			return fmt.Errorf("bad --metrics %q: want host:port", m)
		}
	}
	once := c.Bool("once")
	if !once && !isTerminal(c.App.Writer) {
		return errNoTerminal
	}
	cl, err := newKafkaClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	src := newTopSource(cl.Client, c.StringSlice("metrics"), cl.timeout)
	limits := topLimits{partitions: max(c.Int("partitions"), 0), groups: max(c.Int("groups"), 0)}
	if once {
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
		return printTop(c.App.Writer, buildTopView(first, second, limits))
	}
	return newTopUI(src, interval, limits, nil).run(c.Context)
}

// isTerminal reports whether w is a terminal the screen can take over: a character
// device, with a controlling terminal (/dev/tty, which tcell opens) on Unix.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	if runtime.GOOS == "windows" {
		return true
	}
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return false
	}
	tty.Close()
	return true
}

// topSource gathers samples. Not safe for concurrent use: one goroutine samples.
type topSource struct {
	cl       *kgo.Client
	explicit []string      // --metrics endpoints; nil: derived from the brokers
	timeout  time.Duration // bounds each request
	http     *http.Client
	known    map[int32]string // every broker seen so far: id -> host:port, so that one that vanishes stays listed
}

func newTopSource(cl *kgo.Client, explicit []string, timeout time.Duration) *topSource {
	return &topSource{cl: cl, explicit: explicit, timeout: timeout,
		http: &http.Client{Timeout: min(timeout, 5*time.Second)}, known: map[int32]string{}}
}

// topSample is the cluster at one moment.
type topSample struct {
	at         time.Time
	clusterID  string
	controller int32
	brokers    map[int32]*topBroker    // every broker known: registered, fenced, or named as a replica
	topics     []topTopic              // every topic, internal ones included
	scrapes    map[int32]*brokerScrape // by node id
	unreadable []string                // metrics endpoints that did not answer
}

// topBroker is one broker as the cluster reports it.
type topBroker struct {
	id          int32
	address     string // host:port; "" when unknown
	fenced      bool   // DescribeCluster says so
	registered  bool   // Metadata or DescribeCluster lists it
	unreachable bool   // its Kafka listener refused a connection
}

// topTopic is one topic's partitions.
type topTopic struct {
	name       string
	internal   bool
	partitions []kmsg.MetadataResponseTopicPartition
}

// brokerScrape is one broker's /metrics, reduced to what top shows.
type brokerScrape struct {
	endpoint                      string
	bytesIn, bytesOut, requests   float64
	partitions, leaders, underRep float64
	ready                         bool
	logEnd, size                  map[topicPartition]float64
	latency                       map[string]histogram // TotalTimeMs by request (Produce, Fetch)
	groupLag                      map[string]float64   // kafka_consumergroup_lag_sum by group (the groups it coordinates)
}

// histogram is a cumulative Prometheus histogram.
type histogram struct {
	bounds []float64 // bucket upper bounds, ascending; the last may be +Inf
	counts []uint64  // cumulative counts per bucket
	count  uint64
}

type topicPartition struct {
	topic     string
	partition int32
}

func (s *topSource) sample(ctx context.Context) (*topSample, error) {
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	// Metadata asked each time (not kgo's cache), so that a change shows at once.
	req := kmsg.NewPtrMetadataRequest()
	meta, err := req.RequestWith(rctx, s.cl)
	if err != nil {
		return nil, err
	}
	out := &topSample{at: time.Now(), controller: meta.ControllerID, brokers: map[int32]*topBroker{}, scrapes: map[int32]*brokerScrape{}}
	if meta.ClusterID != nil {
		out.clusterID = *meta.ClusterID
	}
	broker := func(id int32) *topBroker {
		b := out.brokers[id]
		if b == nil {
			b = &topBroker{id: id, address: s.known[id]}
			out.brokers[id] = b
		}
		return b
	}
	for _, b := range meta.Brokers {
		tb := broker(b.NodeID)
		tb.address, tb.registered = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), true
	}
	// DescribeCluster lists fenced brokers too (v2+); a cluster without it shows the
	// brokers Metadata lists, and those named as replicas or seen before as down.
	dreq := kmsg.NewPtrDescribeClusterRequest()
	dreq.IncludeFencedBrokers = true
	if dresp, err := dreq.RequestWith(rctx, s.cl); err == nil && kerr.ErrorForCode(dresp.ErrorCode) == nil {
		for _, b := range dresp.Brokers {
			tb := broker(b.NodeID)
			tb.address, tb.registered, tb.fenced = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), true, b.IsFenced
		}
	}
	for _, t := range meta.Topics {
		if t.Topic == nil || t.ErrorCode != 0 {
			continue
		}
		out.topics = append(out.topics, topTopic{name: *t.Topic, internal: t.IsInternal, partitions: t.Partitions})
		for _, p := range t.Partitions {
			for _, id := range p.Replicas {
				broker(id)
			}
		}
	}
	for id := range s.known {
		broker(id)
	}
	for _, b := range out.brokers {
		if b.address != "" {
			s.known[b.id] = b.address
		}
	}
	for _, ep := range s.endpoints(out.brokers) {
		bs, id, err := s.scrape(ctx, ep)
		if err != nil {
			out.unreadable = append(out.unreadable, ep)
			continue
		}
		out.scrapes[id] = bs
	}
	// A registered, unfenced broker whose metrics did not answer: is it there at all?
	for _, b := range out.brokers {
		if out.scrapes[b.id] == nil && b.registered && !b.fenced && b.address != "" {
			conn, err := (&net.Dialer{Timeout: min(s.timeout, time.Second)}).DialContext(ctx, "tcp", b.address)
			if err != nil {
				b.unreachable = true
				continue
			}
			conn.Close()
		}
	}
	return out, nil
}

// endpoints are --metrics, or each registered, unfenced broker's host with the default
// port layout.
func (s *topSource) endpoints(brokers map[int32]*topBroker) []string {
	if len(s.explicit) > 0 {
		return s.explicit
	}
	perHost := map[string]int{}
	for _, b := range brokers {
		if host, _, err := net.SplitHostPort(b.address); err == nil && b.registered {
			perHost[host]++
		}
	}
	var out []string
	for _, id := range sortedIDs(brokers) {
		b := brokers[id]
		host, _, err := net.SplitHostPort(b.address)
		if err != nil || !b.registered || b.fenced {
			continue
		}
		port := defaultMetricsPort
		if perHost[host] > 1 {
			port += int(b.id)
		}
		out = append(out, net.JoinHostPort(host, strconv.Itoa(port)))
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
	return parseScrape(endpoint, fams)
}

// parseScrape reduces one broker's metric families to a brokerScrape and its node id.
func parseScrape(endpoint string, fams map[string]*dto.MetricFamily) (*brokerScrape, int32, error) {
	info := fams["petrel_broker_info"]
	if info == nil || len(info.Metric) == 0 {
		return nil, 0, errors.New(endpoint + ": not a Petrel broker (no petrel_broker_info)")
	}
	id, err := strconv.ParseInt(label(info.Metric[0], "node_id"), 10, 32)
	if err != nil {
		return nil, 0, err
	}
	bs := &brokerScrape{endpoint: endpoint, logEnd: map[topicPartition]float64{}, size: map[topicPartition]float64{},
		latency: map[string]histogram{}, groupLag: map[string]float64{}}
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
	if f := fams["kafka_network_requestmetrics_totaltimems"]; f != nil {
		for _, m := range f.Metric {
			if h := m.GetHistogram(); h != nil {
				var hist histogram
				for _, b := range h.GetBucket() {
					hist.bounds = append(hist.bounds, b.GetUpperBound())
					hist.counts = append(hist.counts, b.GetCumulativeCount())
				}
				hist.count = h.GetSampleCount()
				bs.latency[label(m, "request")] = hist
			}
		}
	}
	if f := fams["kafka_consumergroup_lag_sum"]; f != nil {
		for _, m := range f.Metric {
			bs.groupLag[label(m, "group")] = metricValue(m)
		}
	}
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
