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

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	ucli "github.com/urfave/cli/v2"
)

// defaultMetricsPort + node id is petrel server's default --metrics-listen port (and
// petrel dev's layout).
const defaultMetricsPort = 9644

// metricsListenerConfig is the broker config that reports a broker's metrics listener.
const metricsListenerConfig = "petrel.metrics.listener"

// errNoTerminal is top's answer when its output is not a terminal.
var errNoTerminal = errors.New("petrel top needs a terminal; use --once for a plain-text snapshot")

func topCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "top",
		Usage: "live view of brokers, throughput, latency, consumer lag and the busiest partitions",
		Description: "Reads the cluster over the Kafka protocol and every broker's /metrics. Metrics endpoints\n" +
			"come from --metrics; without it, each broker reports its own (DescribeConfigs,\n" +
			"petrel.metrics.listener), else its host on port 9644 + node id. q or Ctrl-C quits.\n" +
			"--once prints one snapshot as plain text (rates over --interval) and exits.",
		Flags: clientcmd.WithFlags(
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
	if _, err := clientcmd.Args(c); err != nil {
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
	cl, err := clientcmd.NewClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	src := newTopSource(cl.Client, c.StringSlice("metrics"), cl.Timeout())
	limits := topLimits{partitions: max(c.Int("partitions"), 0), groups: max(c.Int("groups"), 0)}
	if once {
		ctx, cancel := context.WithTimeout(c.Context, cl.Timeout()+interval+cl.Timeout())
		defer cancel()
		first, err := src.sample(ctx)
		if err != nil {
			return cl.Explain(err)
		}
		select {
		case <-time.After(interval):
		case <-ctx.Done():
			return ctx.Err()
		}
		second, err := src.sample(ctx)
		if err != nil {
			return cl.Explain(err)
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
	// published are the metrics endpoints brokers reported (petrel.metrics.listener),
	// by broker id; "" is a broker that serves none. Asked again after a failed scrape.
	published map[int32]string
}

func newTopSource(cl *kgo.Client, explicit []string, timeout time.Duration) *topSource {
	return &topSource{cl: cl, explicit: explicit, timeout: timeout,
		http: &http.Client{Timeout: min(timeout, 5*time.Second)}, known: map[int32]string{}, published: map[int32]string{}}
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
	for _, ep := range s.endpoints(ctx, out.brokers) {
		bs, id, err := s.scrape(ctx, ep.addr)
		if err != nil {
			out.unreadable = append(out.unreadable, ep.addr)
			delete(s.published, ep.broker) // it may have restarted elsewhere: ask again
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

// metricsEndpoint is a metrics endpoint to scrape and the broker it is expected to be
// (-1 for a --metrics endpoint).
type metricsEndpoint struct {
	broker int32
	addr   string
}

// endpoints are --metrics, or each registered, unfenced broker's metrics endpoint: the
// one it reports (askEndpoints), else its host on port 9644 + node id (petrel
// server's default).
func (s *topSource) endpoints(ctx context.Context, brokers map[int32]*topBroker) []metricsEndpoint {
	var out []metricsEndpoint
	if len(s.explicit) > 0 {
		for _, e := range s.explicit {
			out = append(out, metricsEndpoint{-1, e})
		}
		return out
	}
	s.askEndpoints(ctx, brokers)
	for _, id := range sortedIDs(brokers) {
		b := brokers[id]
		host, _, err := net.SplitHostPort(b.address)
		if err != nil || !b.registered || b.fenced {
			continue
		}
		addr, ok := s.published[id]
		if !ok {
			addr = net.JoinHostPort(host, strconv.Itoa(defaultMetricsPort+int(id)))
		}
		if addr != "" {
			out = append(out, metricsEndpoint{id, addr})
		}
	}
	return out
}

// askEndpoints asks every registered, unfenced broker whose endpoint is not known yet
// for its petrel.metrics.listener, in one DescribeConfigs that the client splits per
// broker. An unspecified host (0.0.0.0) becomes the broker's own host. A broker that
// does not answer (an older build, no DESCRIBE_CONFIGS right) is left out.
func (s *topSource) askEndpoints(ctx context.Context, brokers map[int32]*topBroker) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, id := range sortedIDs(brokers) {
		if b := brokers[id]; b.registered && !b.fenced && b.address != "" {
			if _, known := s.published[id]; !known {
				r := kmsg.NewDescribeConfigsRequestResource()
				r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(id)), []string{metricsListenerConfig}
				req.Resources = append(req.Resources, r)
			}
		}
	}
	if len(req.Resources) == 0 {
		return
	}
	actx, cancel := context.WithTimeout(ctx, min(s.timeout, 3*time.Second))
	defer cancel()
	for _, shard := range s.cl.RequestSharded(actx, req) {
		if shard.Err != nil {
			continue
		}
		for _, r := range shard.Resp.(*kmsg.DescribeConfigsResponse).Resources {
			id, err := strconv.ParseInt(r.ResourceName, 10, 32)
			b := brokers[int32(id)]
			if err != nil || r.ErrorCode != 0 || b == nil {
				continue
			}
			for _, c := range r.Configs {
				if c.Name == metricsListenerConfig && c.Value != nil {
					s.published[int32(id)] = reachableEndpoint(*c.Value, b.address)
				}
			}
		}
	}
}

// reachableEndpoint is a reported listener address with an unspecified or empty host
// replaced by the host of the broker's Kafka address.
func reachableEndpoint(addr, kafkaAddr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		kafkaHost, _, _ := net.SplitHostPort(kafkaAddr)
		return net.JoinHostPort(kafkaHost, port)
	}
	return addr
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
