package integration

// The measurements of issue P9. Run them with
//
//	go test ./integration/ -run '^$' -bench 'BenchmarkCompaction' -benchtime 1x
//
// BenchmarkCompactionProduceLatency: produce p50/p99 (acks=1, one 1 KiB record per
// request, 1,000 keys) on one node while the cleaner works on the same topic: cleaner
// off, cleaner unthrottled, cleaner throttled to 2 MB/s.
// BenchmarkCompactionMillion: 1,000,000 records over 1,000 keys into a compacted topic;
// reports the records a consumer still reads once the cleaner has caught up.

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func BenchmarkCompactionProduceLatency(b *testing.B) {
	modes := []struct {
		name  string
		props []Option
	}{
		{"cleaner-off", []Option{WithProperty("log.cleaner.enable", "false")}},
		{"unthrottled", []Option{WithProperty("log.cleaner.backoff.ms", "10")}},
		{"throttled-2MBps", []Option{WithProperty("log.cleaner.backoff.ms", "10"), WithProperty("log.cleaner.io.max.bytes.per.second", "2000000")}},
	}
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			c := StartCluster(b, 1, m.props...)
			const topic = "lat"
			c.CreateTopic(b, topic, 1, map[string]*string{"cleanup.policy": new("compact"), "segment.bytes": new("1048576"),
				"min.cleanable.dirty.ratio": new("0.01")})
			cl := c.Client(b, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.ProducerLinger(0))
			ctx := context.Background()
			value := make([]byte, 1024)
			// Fill 64 MiB first so that the cleaner has work while latencies are taken.
			for i := 0; i < 64<<10; i += 256 {
				var recs []*kgo.Record
				for j := i; j < i+256; j++ {
					recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "k%d", j%1000), Value: value})
				}
				if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			var lat []time.Duration
			for n := 0; n < b.N; n++ {
				for i := 0; i < 5000; i++ {
					start := time.Now()
					if err := cl.ProduceSync(ctx, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i%1000), Value: value}).FirstErr(); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(start))
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}

func BenchmarkCompactionMillion(b *testing.B) {
	for n := 0; n < b.N; n++ {
		c := StartCluster(b, 1, WithProperty("log.cleaner.backoff.ms", "100"))
		const topic, records, keys = "million", 1_000_000, 1000
		c.CreateTopic(b, topic, 1, map[string]*string{"cleanup.policy": new("compact"), "segment.bytes": new("1048576")})
		cl := c.Client(b, kgo.DefaultProduceTopic(topic))
		ctx := context.Background()
		start := time.Now()
		for i := 0; i < records; i += 1000 {
			var recs []*kgo.Record
			for j := i; j < i+1000; j++ {
				recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "key-%04d", j%keys), Value: fmt.Appendf(nil, "value-%d", j)})
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				b.Fatal(err)
			}
		}
		produced := time.Since(start)
		// Until the count holds still for two seconds: ~1,000 cleaned records plus the
		// active segment's (a 1 MiB segment holds ~40,000 of these records).
		live, since := -1, time.Now()
		for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline) && time.Since(since) < 2*time.Second; {
			v, err := compactedReplicaView(c, 0, topic, 0)
			if err != nil {
				b.Fatal(err)
			}
			if v.records != live {
				live, since = v.records, time.Now()
			}
			time.Sleep(100 * time.Millisecond)
		}
		b.ReportMetric(float64(live), "records-left")
		b.ReportMetric(produced.Seconds(), "produce-s")
		b.ReportMetric(time.Since(start).Seconds(), "until-compacted-s")
	}
}
