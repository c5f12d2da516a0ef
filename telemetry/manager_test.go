package telemetry

import (
	"errors"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// payload builds an OTLP MetricsData with one gauge per name (value v, attribute
// node_id=node) and a delta monotonic sum "requests".
func payload(t testing.TB, v float64, node string, names ...string) []byte {
	t.Helper()
	attrs := []*commonpb.KeyValue{{Key: "node.id", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: node}}}}
	var ms []*metricspb.Metric
	for _, n := range names {
		ms = append(ms, &metricspb.Metric{Name: n, Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{
			DataPoints: []*metricspb.NumberDataPoint{{Attributes: attrs, Value: &metricspb.NumberDataPoint_AsDouble{AsDouble: v}}}}}})
	}
	ms = append(ms, &metricspb.Metric{Name: "org.apache.kafka.client.requests", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{
		IsMonotonic: true, AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA,
		DataPoints: []*metricspb.NumberDataPoint{{Attributes: attrs, Value: &metricspb.NumberDataPoint_AsInt{AsInt: 2}}}}}})
	b, err := proto.Marshal(&metricspb.MetricsData{ResourceMetrics: []*metricspb.ResourceMetrics{{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: ms}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newTestManager(maxSeries int) (*Manager, *time.Time) {
	now := time.Unix(1_000_000, 0)
	n := byte(0)
	m := NewManager(Config{MaxBytes: 1 << 20, MaxSeries: maxSeries, Now: func() time.Time { return now },
		NewInstanceID: func() (id [16]byte) { n++; id[15] = n; return id }})
	return m, &now
}

var client = ClientInfo{ClientID: "orders-app", SoftwareName: "franz-go", SoftwareVersion: "1.22.3", Principal: "User:ANONYMOUS"}

func TestSubscriptionIDIsKafkas(t *testing.T) {
	// Kafka: CRC32C of Set.toString() + interval, XOR Uuid.hashCode().
	var id [16]byte
	id[7], id[15] = 1, 3 // hi=1, lo=3: h=2, hashCode = 0 ^ 2
	want := int32(crc32.Checksum([]byte("[org.apache.kafka.producer]60000"), crc32.MakeTable(crc32.Castagnoli))) ^ 2
	if got := SubscriptionID([]string{"org.apache.kafka.producer"}, 60000, id); got != want {
		t.Fatalf("SubscriptionID = %d, want %d", got, want)
	}
	if SubscriptionID(nil, 300000, id) == SubscriptionID([]string{"*"}, 300000, id) {
		t.Fatal("an empty and an all-metrics subscription share an id")
	}
}

func TestGetSubscriptionsMatchesAndThrottles(t *testing.T) {
	m, now := newTestManager(100)
	orders, _ := ParseSubscription("orders", map[string]string{MetricsConfig: "org.apache.kafka.producer.", IntervalMsConfig: "1000", MatchConfig: "client_id=orders-.*"})
	other, _ := ParseSubscription("other", map[string]string{MetricsConfig: "*", MatchConfig: "client_id=billing"})
	m.SetSubscriptions([]Subscription{orders, other})

	got := m.GetSubscriptions([16]byte{}, client, *now)
	if got.ErrorCode != 0 || got.ClientInstanceID == ([16]byte{}) {
		t.Fatalf("first get: %+v", got)
	}
	if got.PushIntervalMs != 1000 || len(got.RequestedMetrics) != 1 || got.RequestedMetrics[0] != "org.apache.kafka.producer." {
		t.Fatalf("subscription: %+v", got)
	}
	if got.SubscriptionID != SubscriptionID(got.RequestedMetrics, 1000, got.ClientInstanceID) {
		t.Fatalf("subscription id %d", got.SubscriptionID)
	}
	again := m.GetSubscriptions(got.ClientInstanceID, client, now.Add(500*time.Millisecond))
	if again.ErrorCode != kerr.ThrottlingQuotaExceeded.Code {
		t.Fatalf("a get within the interval: %d", again.ErrorCode)
	}
	later := m.GetSubscriptions(got.ClientInstanceID, client, now.Add(time.Second))
	if later.ErrorCode != 0 || later.SubscriptionID != got.SubscriptionID {
		t.Fatalf("a get after the interval: %+v", later)
	}
	// A client no subscription matches gets nothing, at Kafka's default interval.
	none := m.GetSubscriptions([16]byte{}, ClientInfo{ClientID: "x"}, *now)
	if len(none.RequestedMetrics) != 0 || none.PushIntervalMs != DefaultIntervalMs {
		t.Fatalf("unmatched: %+v", none)
	}
}

func TestPushRules(t *testing.T) {
	m, now := newTestManager(100)
	sub, _ := ParseSubscription("all", map[string]string{MetricsConfig: "*", IntervalMsConfig: "1000"})
	m.SetSubscriptions([]Subscription{sub})
	got := m.GetSubscriptions([16]byte{}, client, *now)
	push := func(at time.Duration, p Push) int16 {
		p.ClientInstanceID = got.ClientInstanceID
		if p.SubscriptionID == 0 {
			p.SubscriptionID = got.SubscriptionID
		}
		return m.PushMetrics(p, client, now.Add(at))
	}
	body := payload(t, 5, "1", "org.apache.kafka.producer.record.queue.time.avg")
	if code := push(0, Push{SubscriptionID: got.SubscriptionID + 1, Metrics: body}); code != kerr.UnknownSubscriptionID.Code {
		t.Fatalf("other subscription id: %d", code)
	}
	// An unknown subscription lets the client ask again at once.
	if g := m.GetSubscriptions(got.ClientInstanceID, client, now.Add(10*time.Millisecond)); g.ErrorCode != 0 {
		t.Fatalf("get after UNKNOWN_SUBSCRIPTION_ID: %d", g.ErrorCode)
	}
	if code := push(20*time.Millisecond, Push{Metrics: body}); code != 0 {
		t.Fatalf("first push after a get: %d", code)
	}
	if code := push(30*time.Millisecond, Push{Metrics: body}); code != kerr.ThrottlingQuotaExceeded.Code {
		t.Fatalf("a push within the interval: %d", code)
	}
	if code := push(2*time.Second, Push{Metrics: body, CompressionType: 9}); code != kerr.UnsupportedCompressionType.Code {
		t.Fatalf("unknown codec: %d", code)
	}
	if code := push(4*time.Second, Push{Metrics: make([]byte, 2<<20)}); code != kerr.TelemetryTooLarge.Code {
		t.Fatalf("a push over telemetry.max.bytes: %d", code)
	}
	if code := push(6*time.Second, Push{Metrics: body, CompressionType: 4, Decompress: func() ([]byte, error) { return nil, ErrTooLarge }}); code != kerr.TelemetryTooLarge.Code {
		t.Fatalf("decompressing past the limit: %d", code)
	}
	if code := push(8*time.Second, Push{Metrics: []byte{0xff, 0xff, 0xff}}); code != kerr.InvalidRecord.Code {
		t.Fatalf("garbage: %d", code)
	}
	if code := push(10*time.Second, Push{Metrics: body}); code != 0 {
		t.Fatalf("push: %d", code)
	}
	// A terminating push is accepted early, and is the last.
	if code := push(10*time.Second+time.Millisecond, Push{Metrics: body, Terminating: true}); code != 0 {
		t.Fatalf("terminating push: %d", code)
	}
	if code := push(20*time.Second, Push{Metrics: body}); code != kerr.InvalidRequest.Code {
		t.Fatalf("a push after the terminating one: %d", code)
	}
	if code := m.PushMetrics(Push{Metrics: body}, client, *now); code != kerr.InvalidRequest.Code {
		t.Fatalf("zero instance id: %d", code)
	}
}

func TestSubscriptionChangeReResolves(t *testing.T) {
	m, now := newTestManager(100)
	got := m.GetSubscriptions([16]byte{}, client, *now)
	sub, _ := ParseSubscription("s", map[string]string{MetricsConfig: "org.apache.kafka.consumer.", IntervalMsConfig: "5000"})
	m.SetSubscriptions([]Subscription{sub})
	if code := m.PushMetrics(Push{ClientInstanceID: got.ClientInstanceID, SubscriptionID: got.SubscriptionID}, client, now.Add(time.Millisecond)); code != kerr.UnknownSubscriptionID.Code {
		t.Fatalf("push with the old subscription id: %d", code)
	}
	next := m.GetSubscriptions(got.ClientInstanceID, client, now.Add(2*time.Millisecond))
	if next.ErrorCode != 0 || next.PushIntervalMs != 5000 || next.SubscriptionID == got.SubscriptionID {
		t.Fatalf("after the change: %+v", next)
	}
}

// exported gathers the manager's metrics as text.
func exported(t *testing.T, m *Manager) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			b.WriteString(mf.GetName())
			for _, l := range mt.GetLabel() {
				b.WriteString(" " + l.GetName() + "=" + l.GetValue())
			}
			if mt.GetCounter() != nil {
				b.WriteString(" " + strings.TrimSpace(strings.TrimPrefix(mt.GetCounter().String(), "value:")))
			} else if mt.GetGauge() != nil {
				b.WriteString(" " + strings.TrimSpace(strings.TrimPrefix(mt.GetGauge().String(), "value:")))
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

func TestPushedMetricsExportedWithClientLabels(t *testing.T) {
	m, now := newTestManager(100)
	got := m.GetSubscriptions([16]byte{}, client, *now)
	p := Push{ClientInstanceID: got.ClientInstanceID, SubscriptionID: got.SubscriptionID,
		Metrics: payload(t, 7.5, "2", "org.apache.kafka.producer.record.queue.time.avg")}
	if code := m.PushMetrics(p, client, now.Add(time.Millisecond)); code != 0 {
		t.Fatalf("push: %d", code)
	}
	// A second push adds the delta sum and replaces the gauge.
	p.Metrics = payload(t, 9, "2", "org.apache.kafka.producer.record.queue.time.avg")
	if code := m.PushMetrics(p, client, now.Add(time.Duration(DefaultIntervalMs)*time.Millisecond+time.Second)); code != 0 {
		t.Fatalf("second push: %d", code)
	}
	*now = now.Add(time.Duration(DefaultIntervalMs)*time.Millisecond + 2*time.Second)
	text := exported(t, m)
	id := uuidString(got.ClientInstanceID)
	for _, want := range []string{
		"org_apache_kafka_producer_record_queue_time_avg client_id=orders-app client_instance_id=" + id + " client_software_name=franz-go client_software_version=1.22.3 node_id=2 principal=User:ANONYMOUS 9",
		"org_apache_kafka_client_requests client_id=orders-app client_instance_id=" + id + " client_software_name=franz-go client_software_version=1.22.3 node_id=2 principal=User:ANONYMOUS 4",
		"kafka_server_client_metrics_instance_count 1",
		"petrel_client_metrics_series 2",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in\n%s", want, text)
		}
	}
}

func TestSeriesLimitDropsAndExpiryForgets(t *testing.T) {
	m, now := newTestManager(3)
	var ids [][16]byte
	for i := 0; i < 3; i++ {
		got := m.GetSubscriptions([16]byte{}, client, *now)
		ids = append(ids, got.ClientInstanceID)
		p := Push{ClientInstanceID: got.ClientInstanceID, SubscriptionID: got.SubscriptionID, Metrics: payload(t, 1, "1", "g")}
		if code := m.PushMetrics(p, client, now.Add(time.Millisecond)); code != 0 {
			t.Fatalf("push %d: %d", i, code)
		}
	}
	text := exported(t, m)
	// Three clients, two series each, at most three kept: three dropped.
	if !strings.Contains(text, "petrel_client_metrics_series 3\n") || !strings.Contains(text, "petrel_client_metrics_dropped_series_total 3\n") {
		t.Fatalf("limit not held:\n%s", text)
	}
	// Clients that stop pushing are forgotten after three push intervals, and their
	// series go with them.
	*now = now.Add(3*time.Duration(DefaultIntervalMs)*time.Millisecond + time.Minute)
	text = exported(t, m)
	if !strings.Contains(text, "kafka_server_client_metrics_instance_count 0\n") || !strings.Contains(text, "petrel_client_metrics_series 0\n") {
		t.Fatalf("not expired:\n%s", text)
	}
	if m.Instances() != 0 {
		t.Fatalf("instances %d", m.Instances())
	}
}

func TestInstanceLimitEvictsTheLeastRecentlySeen(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	n := byte(0)
	m := NewManager(Config{MaxInstances: 2, NewInstanceID: func() (id [16]byte) { n++; id[15] = n; return id }})
	a := m.GetSubscriptions([16]byte{}, client, now).ClientInstanceID
	m.GetSubscriptions([16]byte{}, client, now.Add(time.Second))
	m.GetSubscriptions([16]byte{}, client, now.Add(2*time.Second))
	if m.Instances() != 2 {
		t.Fatalf("instances %d", m.Instances())
	}
	m.mu.Lock()
	_, kept := m.instances[a]
	m.mu.Unlock()
	if kept {
		t.Fatal("the oldest instance was kept")
	}
}

func TestParseSubscriptionErrors(t *testing.T) {
	for _, cfg := range []map[string]string{
		{IntervalMsConfig: "99"}, {IntervalMsConfig: "3600001"}, {IntervalMsConfig: "x"},
		{MatchConfig: "client_colour=red"}, {MatchConfig: "client_id"}, {MatchConfig: "client_id=("},
	} {
		if _, err := ParseSubscription("s", cfg); err == nil {
			t.Errorf("%v accepted", cfg)
		}
	}
	if _, err := ParseSubscription("s", map[string]string{MatchConfig: "client_id=a.*, client_software_name=franz-go"}); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeLimitsAttributes(t *testing.T) {
	var attrs []*commonpb.KeyValue
	for i := 0; i <= MaxAttributes; i++ {
		attrs = append(attrs, &commonpb.KeyValue{Key: strings.Repeat("k", i+1), Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(i)}}})
	}
	b, _ := proto.Marshal(&metricspb.MetricsData{ResourceMetrics: []*metricspb.ResourceMetrics{{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{
		{Name: "wide", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{{Attributes: attrs}}}}},
		{Name: "narrow", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{{Attributes: attrs[:2]}}}}},
	}}}}}})
	points, dropped, err := Decode(b)
	if err != nil || dropped != 1 || len(points) != 1 || points[0].Labels[1] != (Label{"kk", "1"}) {
		t.Fatalf("points %+v dropped %d err %v", points, dropped, err)
	}
	if _, _, err := Decode([]byte{0x0a, 0xff}); err == nil {
		t.Fatal("truncated payload decoded")
	}
	_ = errors.New
}

func TestClashingClientMetricsDoNotBreakTheExport(t *testing.T) {
	m, now := newTestManager(100)
	gauge := &metricspb.Metric{Name: "x.y", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{{}}}}}
	sum := &metricspb.Metric{Name: "x_y", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{IsMonotonic: true, DataPoints: []*metricspb.NumberDataPoint{{}}}}}
	broker := &metricspb.Metric{Name: "kafka.server.brokertopicmetrics.messagesin.total", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{{}}}}}
	b, _ := proto.Marshal(&metricspb.MetricsData{ResourceMetrics: []*metricspb.ResourceMetrics{{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{gauge, sum, broker}}}}}})
	got := m.GetSubscriptions([16]byte{}, client, *now)
	if code := m.PushMetrics(Push{ClientInstanceID: got.ClientInstanceID, SubscriptionID: got.SubscriptionID, Metrics: b}, client, *now); code != 0 {
		t.Fatalf("push: %d", code)
	}
	text := exported(t, m) // fails the test if Gather errs
	if strings.Contains(text, "kafka_server_brokertopicmetrics") || strings.Count(text, "x_y ") != 1 {
		t.Fatalf("clashing series exported:\n%s", text)
	}
}

// TestConcurrentPushesAndScrapes: pushes, subscription changes and scrapes from many
// goroutines (run with -race) keep the series count within its limit.
func TestConcurrentPushesAndScrapes(t *testing.T) {
	m, now := newTestManager(40)
	at := *now
	body := payload(t, 1, "1", "a", "b", "c")
	done := make(chan struct{})
	for g := 0; g < 4; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 50; i++ {
				got := m.GetSubscriptions([16]byte{}, client, at)
				m.PushMetrics(Push{ClientInstanceID: got.ClientInstanceID, SubscriptionID: got.SubscriptionID, Metrics: body}, client, at)
				if i%10 == 0 {
					m.SetSubscriptions(nil)
				}
			}
		}()
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	for g := 0; g < 4; {
		select {
		case <-done:
			g++
		default:
			if _, err := reg.Gather(); err != nil {
				t.Fatal(err)
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.series > 40 {
		t.Fatalf("%d series kept, limit 40", m.series)
	}
}
