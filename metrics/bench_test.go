package metrics

import (
	"testing"
	"time"
)

// The hot-path cost of metrics, per produced batch and per request:
//
//	go test ./metrics/ -run '^$' -bench . -benchmem
func BenchmarkTopicCountersProduced(b *testing.B) {
	for _, perPartition := range []bool{true, false} {
		name := "broker-wide"
		if perPartition {
			name = "per-topic"
		}
		b.Run(name, func(b *testing.B) {
			t := New(Options{PerPartition: perPartition}).Topic("t")
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					t.Produced(100, 16384)
				}
			})
		})
	}
}

func BenchmarkObserveRequest(b *testing.B) {
	r := New(Options{})
	r.RegisterAPI(0, "Produce")
	now := time.Now()
	timing := RequestTiming{Received: now, Started: now, Handled: now.Add(time.Microsecond), Ready: now.Add(time.Microsecond),
		WriteStart: now.Add(2 * time.Microsecond), WriteFinish: now.Add(3 * time.Microsecond)}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.ObserveRequest(0, timing)
		}
	})
}
