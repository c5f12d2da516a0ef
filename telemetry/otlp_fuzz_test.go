package telemetry

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// FuzzDecode feeds arbitrary bytes to the OTLP decoder and the push path: no panic,
// every point within the limits, and the whole export still gathers. CI runs it with
// a count budget: go test -run '^$' -fuzz FuzzDecode -fuzztime 20000x ./telemetry
func FuzzDecode(f *testing.F) {
	f.Add(payload(f, 1, "1", "org.apache.kafka.producer.record.queue.time.avg"))
	f.Add(payload(f, -3, "", "9starts.with.digit", "client_id", ""))
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0x02, 0x12, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		points, _, err := Decode(b)
		if err != nil {
			return
		}
		for _, p := range points {
			if p.Name == "" || len(p.Labels) > MaxAttributes {
				t.Fatalf("point out of bounds: %+v", p)
			}
			for i, l := range p.Labels {
				if len(l.Value) > MaxLabelLength || (i > 0 && p.Labels[i-1].Name >= l.Name) {
					t.Fatalf("labels not bounded or sorted: %+v", p.Labels)
				}
			}
		}
		m, now := newTestManager(50)
		got := m.GetSubscriptions([16]byte{}, client, *now)
		if code := m.PushMetrics(Push{ClientInstanceID: got.ClientInstanceID, SubscriptionID: got.SubscriptionID, Metrics: b}, client, *now); code != 0 {
			t.Fatalf("a payload that decodes was refused: %d", code)
		}
		reg := prometheus.NewRegistry()
		reg.MustRegister(m)
		if _, err := reg.Gather(); err != nil {
			t.Fatalf("export of a decodable push does not gather: %v", err)
		}
		_ = time.Second
	})
}
