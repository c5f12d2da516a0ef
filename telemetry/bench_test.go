package telemetry

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkPushMetrics: one push of 50 gauges and a sum from a known client, decoded
// and recorded (the broker's cost per push).
func BenchmarkPushMetrics(b *testing.B) {
	names := make([]string, 50)
	for i := range names {
		names[i] = fmt.Sprintf("org.apache.kafka.producer.metric%02d", i)
	}
	body := payload(b, 1, "1", names...)
	m, now := newTestManager(10000)
	got := m.GetSubscriptions([16]byte{}, client, *now)
	p := Push{ClientInstanceID: got.ClientInstanceID, SubscriptionID: got.SubscriptionID, Metrics: body, Terminating: false}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	at := *now
	for i := 0; i < b.N; i++ {
		at = at.Add(time.Duration(DefaultIntervalMs) * time.Millisecond)
		if code := m.PushMetrics(p, client, at); code != 0 {
			b.Fatal(code)
		}
	}
}
