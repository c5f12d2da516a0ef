package broker

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/klauspost/compress/zstd"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// startTelemetryBroker starts a one-node broker with a metrics listener and returns
// it with its /metrics URL.
func startTelemetryBroker(t *testing.T, props map[string]string) (*Broker, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := startReadyBroker(t, Config{
		NodeID: 0, DataDir: t.TempDir(), Listen: "127.0.0.1:0", RaftListen: "127.0.0.1:0", Properties: props,
		MetricsListener: ln,
		Logger:          hclog.New(&hclog.LoggerOptions{Output: newTestLogWriter(t, "node-0 "), Level: hclog.Info}),
	})
	return b, "http://" + ln.Addr().String() + "/metrics"
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// alterClientMetrics sets (non-nil) or deletes a subscription's configs.
func alterClientMetrics(t *testing.T, cl *kgo.Client, name string, configs map[string]*string) (int16, string) {
	t.Helper()
	return alterConfigsOf(t, cl, kmsg.ConfigResourceTypeClientMetrics, name, configs)
}

func listConfigResourcesOf(t *testing.T, b *Broker, version int16, types ...int8) (int16, []string) {
	t.Helper()
	v := kversion.Stable()
	v.SetMaxKeyVersion(int16(kmsg.ListConfigResources), version)
	cl := newClient(t, b, kgo.DisableClientMetrics(), kgo.MaxVersions(v))
	req := kmsg.NewPtrListConfigResourcesRequest()
	req.ResourceTypes = types
	resp, err := cl.Request(testContext(t), req)
	if err != nil {
		t.Fatal(err)
	}
	r := resp.(*kmsg.ListConfigResourcesResponse)
	var out []string
	for _, c := range r.ConfigResources {
		out = append(out, fmt.Sprintf("%d:%s", c.Type, c.Name))
	}
	return r.ErrorCode, out
}

func ptr(s string) *string { return &s }

// TestClientMetricsResource_AlterDescribeList: CLIENT_METRICS subscriptions are set,
// validated, described and deleted through the config APIs, and ListConfigResources
// lists them (v0: subscriptions only; v1: the types asked, Kafka's five).
func TestClientMetricsResource_AlterDescribeList(t *testing.T) {
	b := startTestBroker(t, "", nil)
	cl := newClient(t, b, kgo.DisableClientMetrics())
	mustCreateTopic(t, newAdmin(t, b), "orders", 1, nil)

	if code, msg := alterClientMetrics(t, cl, "producers", map[string]*string{
		"metrics": ptr("org.apache.kafka.producer."), "interval.ms": ptr("1000"), "match": ptr("client_id=orders-.*"),
	}); code != 0 {
		t.Fatalf("alter: %d %s", code, msg)
	}
	for _, bad := range []map[string]*string{{"interval.ms": ptr("50")}, {"colour": ptr("red")}, {"match": ptr("client_colour=red")}, {"match": ptr("client_id=(")}} {
		if code, msg := alterClientMetrics(t, cl, "producers", bad); code != kerr.InvalidConfig.Code {
			t.Errorf("%v: %d %s, want INVALID_CONFIG", bad, code, msg)
		}
	}
	if code, _ := alterClientMetrics(t, cl, "", map[string]*string{"metrics": ptr("*")}); code != kerr.InvalidRequest.Code {
		t.Errorf("empty name: %d, want INVALID_REQUEST", code)
	}

	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeClientMetrics, "producers"
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(testContext(t), cl)
	if err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("describe: %v %+v", err, resp)
	}
	got := map[string]string{}
	for _, c := range resp.Resources[0].Configs {
		got[c.Name] = fmt.Sprintf("%s/%d", derefOr(c.Value), c.Source)
	}
	want := map[string]string{"metrics": "org.apache.kafka.producer./7", "interval.ms": "1000/7", "match": "client_id=orders-.*/7"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("described %v, want %v", got, want)
	}

	if code, names := listConfigResourcesOf(t, b, 0); code != 0 || fmt.Sprint(names) != "[16:producers]" {
		t.Fatalf("v0: %d %v", code, names)
	}
	if code, names := listConfigResourcesOf(t, b, 1, 2, 16); code != 0 || fmt.Sprint(names) != "[2:orders 16:producers]" {
		t.Fatalf("v1 topics and subscriptions: %d %v", code, names)
	}
	if code, names := listConfigResourcesOf(t, b, 1); code != 0 || !strings.Contains(fmt.Sprint(names), "4:0") || !strings.Contains(fmt.Sprint(names), "16:producers") {
		t.Fatalf("v1 every type: %d %v", code, names)
	}
	if code, _ := listConfigResourcesOf(t, b, 1, 3); code != kerr.UnsupportedVersion.Code {
		t.Fatalf("v1 type 3: %d, want UNSUPPORTED_VERSION", code)
	}

	// A subscription is kept in the metadata log: a restarted node still has it.
	dir := b.cfg.DataDir
	b.Shutdown(context.Background())
	b = startTestBroker(t, dir, nil)
	cl = newClient(t, b, kgo.DisableClientMetrics())
	if code, names := listConfigResourcesOf(t, b, 0); code != 0 || fmt.Sprint(names) != "[16:producers]" {
		t.Fatalf("after a restart: %d %v", code, names)
	}

	// Deleting every config deletes the subscription.
	if code, msg := alterClientMetrics(t, cl, "producers", map[string]*string{"metrics": nil, "interval.ms": nil, "match": nil}); code != 0 {
		t.Fatalf("delete: %d %s", code, msg)
	}
	if code, names := listConfigResourcesOf(t, b, 0); code != 0 || len(names) != 0 {
		t.Fatalf("after delete: %d %v", code, names)
	}
}

// otlpGauge is an OTLP MetricsData of one gauge with one attribute.
func otlpGauge(t *testing.T, name string, v float64) []byte {
	t.Helper()
	point := &metricspb.NumberDataPoint{
		Attributes: []*commonpb.KeyValue{{Key: "node.id", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "0"}}}},
		Value:      &metricspb.NumberDataPoint_AsDouble{AsDouble: v},
	}
	metric := &metricspb.Metric{Name: name, Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: []*metricspb.NumberDataPoint{point}}}}
	b, err := proto.Marshal(&metricspb.MetricsData{ResourceMetrics: []*metricspb.ResourceMetrics{{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{metric}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTelemetry_GetAndPushOverTheWire: GetTelemetrySubscriptions assigns an instance
// id and hands out the matching subscription; a zstd-compressed OTLP push is decoded
// and its metric appears on /metrics with the client's labels; Kafka's errors for a
// push too early, with another subscription id, too large, and after the last.
func TestTelemetry_GetAndPushOverTheWire(t *testing.T) {
	b, metricsURL := startTelemetryBroker(t, map[string]string{"telemetry.max.bytes": "4096"})
	cl := newClient(t, b, kgo.DisableClientMetrics(), kgo.ClientID("orders-app"))
	if code, msg := alterClientMetrics(t, cl, "all", map[string]*string{"metrics": ptr("*"), "interval.ms": ptr("60000")}); code != 0 {
		t.Fatalf("alter: %d %s", code, msg)
	}
	ctx := testContext(t)
	get := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
	sub, err := get.RequestWith(ctx, cl)
	if err != nil || sub.ErrorCode != 0 {
		t.Fatalf("get: %v %+v", err, sub)
	}
	if sub.ClientInstanceID == ([16]byte{}) || sub.PushIntervalMillis != 60000 || fmt.Sprint(sub.RequestedMetrics) != "[*]" ||
		fmt.Sprint(sub.AcceptedCompressionTypes) != "[4 3 1 2]" || sub.TelemetryMaxBytes != 4096 || !sub.DeltaTemporality {
		t.Fatalf("subscription: %+v", sub)
	}
	get.ClientInstanceID = sub.ClientInstanceID
	if again, _ := get.RequestWith(ctx, cl); again.ErrorCode != kerr.ThrottlingQuotaExceeded.Code {
		t.Fatalf("a second get within the interval: %d", again.ErrorCode)
	}

	enc, _ := zstd.NewWriter(nil)
	compressed := enc.EncodeAll(otlpGauge(t, "org.apache.kafka.producer.record.queue.time.avg", 12.5), nil)
	push := func(p kmsg.PushTelemetryRequest) int16 {
		t.Helper()
		p.ClientInstanceID = sub.ClientInstanceID
		resp, err := p.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.ErrorCode
	}
	if code := push(kmsg.PushTelemetryRequest{SubscriptionID: sub.SubscriptionID + 1, CompressionType: 4, Metrics: compressed}); code != kerr.UnknownSubscriptionID.Code {
		t.Fatalf("other subscription id: %d", code)
	}
	// After UNKNOWN_SUBSCRIPTION_ID the client may ask again at once, and push.
	if again, _ := get.RequestWith(ctx, cl); again.ErrorCode != 0 || again.SubscriptionID != sub.SubscriptionID {
		t.Fatalf("a get after UNKNOWN_SUBSCRIPTION_ID: %+v", again)
	}
	if code := push(kmsg.PushTelemetryRequest{SubscriptionID: sub.SubscriptionID, CompressionType: 4, Metrics: compressed}); code != 0 {
		t.Fatalf("push: %d", code)
	}
	if code := push(kmsg.PushTelemetryRequest{SubscriptionID: sub.SubscriptionID, Metrics: otlpGauge(t, "x", 1)}); code != kerr.ThrottlingQuotaExceeded.Code {
		t.Fatalf("a push within the interval: %d", code)
	}
	if code := push(kmsg.PushTelemetryRequest{SubscriptionID: sub.SubscriptionID, Terminating: true, Metrics: make([]byte, 5000)}); code != kerr.TelemetryTooLarge.Code {
		t.Fatalf("a push over telemetry.max.bytes: %d", code)
	}
	if code := push(kmsg.PushTelemetryRequest{SubscriptionID: sub.SubscriptionID, Terminating: true}); code != kerr.InvalidRequest.Code {
		t.Fatalf("a push after a terminating one: %d", code)
	}

	text := scrape(t, metricsURL)
	id := fmt.Sprintf("client_instance_id=%q", base64ID(sub.ClientInstanceID))
	for _, want := range []string{"org_apache_kafka_producer_record_queue_time_avg{", `client_id="orders-app"`, id,
		`client_software_name="kgo"`, `principal="User:ANONYMOUS"`, `node_id="0"`, "} 12.5",
		"kafka_server_client_metrics_instance_count 1", "kafka_server_client_metrics_unknown_subscription_request_total 1"} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		t.Log(text)
	}
}

func base64ID(id [16]byte) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	var b strings.Builder
	var acc uint32
	bits := 0
	for _, c := range id {
		acc = acc<<8 | uint32(c)
		bits += 8
		for bits >= 6 {
			bits -= 6
			b.WriteByte(alphabet[(acc>>bits)&63])
		}
	}
	if bits > 0 {
		b.WriteByte(alphabet[(acc<<(6-bits))&63])
	}
	return b.String()
}

// TestTelemetry_KgoPushes: franz-go (KIP-714 since v1.18) asks for its subscription
// and pushes its metrics on its own once the broker advertises the APIs and a
// subscription matches it; they show on /metrics with its labels.
func TestTelemetry_KgoPushes(t *testing.T) {
	b, metricsURL := startTelemetryBroker(t, nil)
	admin := newClient(t, b, kgo.DisableClientMetrics())
	if code, msg := alterClientMetrics(t, admin, "kgo", map[string]*string{
		// franz-go reads only [""] as every metric, where Kafka sends "*": a prefix
		// works with both.
		"metrics": ptr("org.apache.kafka."), "interval.ms": ptr("100"), "match": ptr("client_software_name=kgo"),
	}); code != 0 {
		t.Fatalf("alter: %d %s", code, msg)
	}
	mustCreateTopic(t, newAdmin(t, b), "telemetry", 1, nil)
	cl := newClient(t, b, kgo.ClientID("pushing-producer"), kgo.DefaultProduceTopic("telemetry"))
	if err := cl.ProduceSync(testContext(t), &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, func() error {
		text := scrape(t, metricsURL)
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "org_apache_kafka_") && strings.Contains(line, `client_id="pushing-producer"`) {
				return nil
			}
		}
		return fmt.Errorf("no pushed kgo metric on /metrics yet")
	})
	_ = context.Background
}

// TestTelemetry_Authorization: as Kafka, ListConfigResources needs DESCRIBE_CONFIGS on
// the cluster, while any client may ask for its subscription and push.
func TestTelemetry_Authorization(t *testing.T) {
	b := authzBroker(t)
	list := kmsg.NewPtrListConfigResourcesRequest()
	list.Version = 1
	if code := topErrorCode(decide(b, as("User:alice", list), kmsg.NewPtrListConfigResourcesResponse())); code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice's ListConfigResources: %v", kerr.ErrorForCode(code))
	}
	if d := b.checkRequest(as("User:alice", kmsg.NewPtrGetTelemetrySubscriptionsRequest())); d.answer != nil || d.close != nil {
		t.Fatalf("alice's GetTelemetrySubscriptions was refused: %+v", d)
	}
	if d := b.checkRequest(as("User:alice", kmsg.NewPtrPushTelemetryRequest())); d.answer != nil || d.close != nil {
		t.Fatalf("alice's PushTelemetry was refused: %+v", d)
	}
}
