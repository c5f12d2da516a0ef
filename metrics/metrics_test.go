package metrics

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func serveTest(t *testing.T, reg *Registry, ready func() error) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := Serve(ln, reg, ready)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return "http://" + s.Addr().String()
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// scrape fetches /metrics and parses it with the client library's text parser.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := get(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("the /metrics output does not parse: %v\n%s", err, body)
	}
	return fams
}

func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("metric %s missing", name)
	}
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if got[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	t.Fatalf("metric %s has no series %v", name, labels)
	return 0
}

func TestMetrics_CountersAndStateParse(t *testing.T) {
	snap := Snapshot{
		Partitions: []PartitionState{
			{Topic: "a", Partition: 0, Leader: true, UnderReplicated: true, Size: 100, Segments: 2},
			{Topic: "a", Partition: 1, Leader: false, Size: 50, Segments: 1},
		},
		ActiveController: true, OfflinePartitions: 1, GlobalPartitions: 4, GlobalTopics: 2, MaxLag: 7,
		Raft:      RaftState{Term: 3, CommitIndex: 10, AppliedIndex: 9, LastContactSeconds: 0},
		GroupLags: []GroupLag{{Group: "g", Topic: "a", Partition: 0, Lag: 5}, {Group: "g", Topic: "a", Partition: 1, Lag: 2}},
	}
	reg := New(Options{PerPartition: true, Snapshot: func() Snapshot { return snap }})
	reg.RegisterAPI(0, "Produce")
	a := reg.Topic("a")
	a.Produced(10, 1000)
	a.Fetched(400)
	reg.Topic("b").Produced(1, 10)
	reg.ISRShrunk()
	reg.ISRUpdateFailed()
	reg.ISRUpdateFailed()
	reg.Fsynced(0.002)
	now := time.Now()
	reg.ObserveRequest(0, RequestTiming{Received: now, Started: now, Handled: now.Add(time.Millisecond),
		Ready: now.Add(3 * time.Millisecond), WriteStart: now.Add(3 * time.Millisecond), WriteFinish: now.Add(4 * time.Millisecond)})
	reg.ObserveRequest(99, RequestTiming{}) // an unnamed API is not counted and does not panic

	fams := scrape(t, serveTest(t, reg, nil))
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"kafka_server_brokertopicmetrics_messagesin_total", map[string]string{"topic": "a"}, 10},
		{"kafka_server_brokertopicmetrics_messagesin_total", map[string]string{"topic": ""}, 11},
		{"kafka_server_brokertopicmetrics_bytesin_total", map[string]string{"topic": ""}, 1010},
		{"kafka_server_brokertopicmetrics_bytesout_total", map[string]string{"topic": "a"}, 400},
		{"kafka_server_replicamanager_isrshrinks_total", nil, 1},
		{"kafka_server_replicamanager_isrexpands_total", nil, 0},
		{"kafka_server_replicamanager_failedisrupdates_total", nil, 2},
		{"kafka_server_replicamanager_underreplicatedpartitions", nil, 1},
		{"kafka_server_replicamanager_partitioncount", nil, 2},
		{"kafka_server_replicamanager_leadercount", nil, 1},
		{"kafka_controller_kafkacontroller_activecontrollercount", nil, 1},
		{"kafka_controller_kafkacontroller_offlinepartitionscount", nil, 1},
		{"kafka_controller_kafkacontroller_globalpartitioncount", nil, 4},
		{"kafka_server_replicafetchermanager_maxlag", map[string]string{"clientid": "Replica"}, 7},
		{"kafka_log_log_size", map[string]string{"topic": "a", "partition": "1"}, 50},
		{"kafka_log_log_numlogsegments", map[string]string{"topic": "a", "partition": "0"}, 2},
		{"kafka_network_requestmetrics_requests_total", map[string]string{"request": "Produce"}, 1},
		{"kafka_network_requestmetrics_totaltimems", map[string]string{"request": "Produce"}, 1},
		{"kafka_network_requestmetrics_remotetimems", map[string]string{"request": "Produce"}, 1},
		{"kafka_log_logflushstats_logflushrateandtimems", nil, 1},
		{"petrel_raft_term", nil, 3},
		{"petrel_raft_commit_index", nil, 10},
		{"kafka_consumergroup_lag", map[string]string{"group": "g", "partition": "0"}, 5},
		{"kafka_consumergroup_lag_sum", map[string]string{"group": "g"}, 7},
	} {
		if got := value(t, fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if h := fams["kafka_network_requestmetrics_remotetimems"].Metric[0].Histogram; h.GetSampleSum() < 1.9 || h.GetSampleSum() > 2.1 {
		t.Errorf("remote time %v ms, want 2", h.GetSampleSum())
	}
	if _, ok := fams["go_goroutines"]; !ok {
		t.Error("Go runtime metrics missing")
	}
}

func TestMetrics_PerPartitionOff(t *testing.T) {
	snap := Snapshot{Partitions: []PartitionState{{Topic: "a", Partition: 0, Leader: true, Size: 100}},
		GroupLags: []GroupLag{{Group: "g", Topic: "a", Lag: 5}}}
	reg := New(Options{PerPartition: false, Snapshot: func() Snapshot { return snap }})
	reg.Topic("a").Produced(3, 30)
	fams := scrape(t, serveTest(t, reg, nil))
	for _, name := range []string{"kafka_log_log_size", "kafka_consumergroup_lag"} {
		if _, ok := fams[name]; ok {
			t.Errorf("%s is served with per-partition series off", name)
		}
	}
	if len(fams["kafka_server_brokertopicmetrics_messagesin_total"].Metric) != 1 {
		t.Errorf("per-topic series served with per-partition series off")
	}
	if got := value(t, fams, "kafka_server_brokertopicmetrics_messagesin_total", map[string]string{"topic": ""}); got != 3 {
		t.Errorf("broker-wide MessagesIn = %v, want 3", got)
	}
	if got := value(t, fams, "kafka_consumergroup_lag_sum", map[string]string{"group": "g"}); got != 5 {
		t.Errorf("group lag sum = %v, want 5", got)
	}
}

func TestMetrics_HealthAndReadiness(t *testing.T) {
	var notReady atomic.Pointer[error]
	reason := errors.New("metadata store failed: append of raft.db: no space left on device")
	notReady.Store(&reason)
	base := serveTest(t, New(Options{}), func() error {
		if p := notReady.Load(); p != nil {
			return *p
		}
		return nil
	})
	if code, _ := get(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d", code)
	}
	if code, body := get(t, base+"/readyz"); code != http.StatusServiceUnavailable || body != "not ready: "+reason.Error()+"\n" {
		t.Errorf("/readyz before ready = %d %q, want 503 with the reason", code, body)
	}
	notReady.Store(nil)
	if code, _ := get(t, base+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz when ready = %d, want 200", code)
	}
}

func TestMetrics_RaftSinkServesRaftMetrics(t *testing.T) {
	g := RaftGatherer()
	if g != RaftGatherer() {
		t.Fatal("the Raft sink is installed more than once")
	}
	if _, err := g.Gather(); err != nil {
		t.Fatal(err)
	}
}
