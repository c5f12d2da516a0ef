package integration

// Observability (issue P11) over HTTP: /metrics of a 3-node cluster under load, with
// Kafka's metric names; /readyz following start-up readiness.

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// metricsURL is node i's metrics listener.
func (c *Cluster) metricsURL(i int) string {
	return "http://" + c.Node(i).MetricsAddr().String()
}

func httpGet(url string) (int, string, error) {
	cl := &http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// scrapeNode parses node i's /metrics with the client library's text parser.
func (c *Cluster) scrapeNode(t testing.TB, i int) map[string]*dto.MetricFamily {
	t.Helper()
	code, body, err := httpGet(c.metricsURL(i) + "/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("node-%d /metrics: %d %v", i, code, err)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("node-%d /metrics does not parse: %v", i, err)
	}
	return fams
}

// metricSum adds the values of a family's series whose labels include want.
func metricSum(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	var sum float64
next:
	for _, m := range f.Metric {
		for k, v := range want {
			found := false
			for _, l := range m.Label {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

// scrapeAll scrapes every running node once.
func (c *Cluster) scrapeAll(t testing.TB) []map[string]*dto.MetricFamily {
	var out []map[string]*dto.MetricFamily
	for _, i := range c.running() {
		out = append(out, c.scrapeNode(t, i))
	}
	return out
}

// nodesSum is metricSum over scrapes of several nodes.
func nodesSum(scrapes []map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	var sum float64
	for _, fams := range scrapes {
		sum += metricSum(fams, name, want)
	}
	return sum
}

// clusterSum is metricSum over the running nodes.
func (c *Cluster) clusterSum(t testing.TB, name string, want map[string]string) float64 {
	return nodesSum(c.scrapeAll(t), name, want)
}

// documentedMetrics reads the metric names of docs/metrics.md's mapping table.
func documentedMetrics(t *testing.T) []string {
	data, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range regexp.MustCompile("(?m)^\\| `((?:kafka|petrel)_[a-z_]+)` \\|").FindAllStringSubmatch(string(data), -1) {
		names = append(names, m[1])
	}
	if len(names) < 30 {
		t.Fatalf("only %d metrics found in docs/metrics.md", len(names))
	}
	return names
}

func TestMetrics_ThreeNodeClusterUnderLoad(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3)
	ctx := testContext(t)
	const topic, solo, grp = "metered", "solo", "lagging"
	c.CreateTopicRF(t, topic, 3, 3, nil)
	c.CreateTopicRF(t, solo, 3, 1, nil)
	c.WaitConverged()

	// Load: 300 records, a group that committed offset 0 everywhere, a consumer.
	const n = 300
	prod := c.Client(t, kgo.DefaultProduceTopic(topic))
	for i := 0; i < n; i += 50 {
		var recs []*kgo.Record
		for j := i; j < i+50; j++ {
			recs = append(recs, &kgo.Record{Key: []byte(recordKey(j)), Value: []byte(recordValue("m", j))})
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := c.Admin(t)
	var offsets kadm.Offsets
	for p := int32(0); p < 3; p++ {
		offsets.Add(kadm.Offset{Topic: topic, Partition: p, At: 0, LeaderEpoch: -1})
	}
	if err := adm.CommitAllOffsets(ctx, grp, offsets); err != nil {
		t.Fatal(err)
	}
	cons := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for got := 0; got < n; {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", got, n, err)
		}
		got += fs.NumRecords()
	}

	// Every documented metric is served by some node, and the counters moved.
	testwait.For(t, 30*time.Second, func() error {
		present := map[string]bool{}
		for _, i := range c.running() {
			for name := range c.scrapeNode(t, i) {
				present[name] = true
			}
		}
		var missing []string
		for _, name := range documentedMetrics(t) {
			if !present[name] {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("documented metrics not served: %v", missing)
		}
		return nil
	})
	topicLabel := map[string]string{"topic": topic}
	all := c.scrapeAll(t)
	if got := nodesSum(all, "kafka_server_brokertopicmetrics_messagesin_total", topicLabel); got < n {
		t.Errorf("MessagesIn for %s = %v, want at least %d", topic, got, n)
	}
	if in, all := nodesSum(all, "kafka_server_brokertopicmetrics_bytesin_total", topicLabel),
		nodesSum(all, "kafka_server_brokertopicmetrics_bytesin_total", map[string]string{"topic": ""}); in <= 0 || all < in {
		t.Errorf("BytesIn for %s = %v, broker-wide %v", topic, in, all)
	}
	if got := nodesSum(all, "kafka_server_brokertopicmetrics_bytesout_total", topicLabel); got <= 0 {
		t.Errorf("BytesOut for %s = %v after consuming", topic, got)
	}
	if got := nodesSum(all, "kafka_server_brokertopicmetrics_replicationbytesin_total", nil); got <= 0 {
		t.Errorf("ReplicationBytesIn = %v with replication factor 3", got)
	}
	if got := nodesSum(all, "kafka_network_requestmetrics_requests_total", map[string]string{"request": "Produce"}); got < n/50 {
		t.Errorf("Produce requests = %v, want at least %d", got, n/50)
	}
	if got := nodesSum(all, "kafka_network_requestmetrics_totaltimems", map[string]string{"request": "Fetch"}); got <= 0 {
		t.Errorf("no Fetch latency observed")
	}
	if _, ok := all[0]["petrel_raft_commitTime"]; !ok { // hashicorp/raft's own, through the go-metrics sink
		t.Errorf("Raft's go-metrics (petrel_raft_commitTime) not served")
	}
	if got := nodesSum(all, "kafka_log_logflushstats_logflushrateandtimems", nil); got <= 0 {
		t.Errorf("no fsync observed")
	}
	if got := nodesSum(all, "kafka_server_replicamanager_leadercount", nil); got < 6 {
		t.Errorf("LeaderCount summed = %v, want at least the 6 user partitions", got)
	}
	testwait.For(t, 30*time.Second, func() error {
		if got := c.clusterSum(t, "kafka_consumergroup_lag", map[string]string{"group": grp, "topic": topic}); got != n {
			return fmt.Errorf("lag of %s = %v, want %d", grp, got, n)
		}
		return nil
	})

	// ActiveControllerCount is 1 on exactly one node: the controller.
	ctrl := c.Controller()
	for _, i := range c.running() {
		want := 0.0
		if i == ctrl {
			want = 1
		}
		if got := metricSum(c.scrapeNode(t, i), "kafka_controller_kafkacontroller_activecontrollercount", nil); got != want {
			t.Errorf("node-%d ActiveControllerCount = %v, want %v (controller node-%d)", i, got, want, ctrl)
		}
	}
	testwait.For(t, 30*time.Second, func() error {
		if got := c.clusterSum(t, "kafka_server_replicamanager_underreplicatedpartitions", nil); got != 0 {
			return fmt.Errorf("UnderReplicatedPartitions = %v with every node up", got)
		}
		return nil
	})

	// A follower stops: partitions it replicates are under-replicated, the solo
	// partition it holds is offline.
	victim := (ctrl + 1) % 3
	offline := 0
	for _, p := range c.Image(ctrl).Topics[solo].Partitions {
		if p.Replicas[0] == int32(victim) {
			offline++
		}
	}
	if offline == 0 {
		t.Fatalf("no %s partition on node-%d", solo, victim)
	}
	c.Stop(victim)
	testwait.For(t, 30*time.Second, func() error {
		if got := c.clusterSum(t, "kafka_server_replicamanager_underreplicatedpartitions", nil); got == 0 {
			return fmt.Errorf("UnderReplicatedPartitions = 0 with node-%d stopped", victim)
		}
		if got := metricSum(c.scrapeNode(t, ctrl), "kafka_controller_kafkacontroller_offlinepartitionscount", nil); got != float64(offline) {
			return fmt.Errorf("OfflinePartitionsCount = %v, want %d", got, offline)
		}
		return nil
	})
	c.Restart(victim)
	testwait.For(t, 60*time.Second, func() error {
		if got := c.clusterSum(t, "kafka_server_replicamanager_underreplicatedpartitions", nil); got != 0 {
			return fmt.Errorf("UnderReplicatedPartitions = %v after node-%d returned", got, victim)
		}
		if got := c.clusterSum(t, "kafka_controller_kafkacontroller_offlinepartitionscount", nil); got != 0 {
			return fmt.Errorf("OfflinePartitionsCount = %v after node-%d returned", got, victim)
		}
		return nil
	})
	if got := c.clusterSum(t, "kafka_server_replicamanager_isrexpands_total", nil); got <= 0 {
		t.Errorf("IsrExpands = %v after node-%d caught up", got, victim)
	}
	if got := c.clusterSum(t, "kafka_controller_kafkacontroller_activecontrollercount", nil); got != 1 {
		t.Errorf("ActiveControllerCount summed = %v, want 1", got)
	}
}

func TestMetrics_ReadyzFollowsReadiness(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3)
	victim := (c.Controller() + 1) % 3
	c.Stop(victim)
	// Cut off from the others, the restarted node cannot catch up or register.
	c.Partition(victim)
	c.Start(victim)
	url := c.metricsURL(victim)
	if code, _, err := httpGet(url + "/healthz"); err != nil || code != http.StatusOK {
		t.Fatalf("/healthz = %d %v", code, err)
	}
	// Partitioned before it started, the node cannot be ready: no wait is needed.
	if code, _, err := httpGet(url + "/readyz"); err != nil || code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz of a node that has not caught up = %d %v, want 503", code, err)
	}
	if c.Node(victim).Ready() {
		t.Fatal("a partitioned restarted node is ready")
	}
	c.Heal()
	testwait.For(t, 30*time.Second, func() error {
		code, _, err := httpGet(url + "/readyz")
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("/readyz = %d %v", code, err)
		}
		return nil
	})
	if !c.Node(victim).Ready() {
		t.Error("/readyz answered 200 before the broker was ready")
	}
}
