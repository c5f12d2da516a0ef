package integration

// The measurement of issue P10 item 3: one record in flight at a time, acks=all,
// replication factor 3, min.insync.replicas 2, 1 KiB random records, with the fsync
// default and in page-cache mode (flush.messages at its maximum), on three in-process
// brokers. Each iteration is one ProduceSync: the next record goes out only after the
// previous one's answer. Run it with
//
//	go test ./integration/ -run '^$' -bench BenchmarkOneRecordInFlight -benchtime 3000x
//
// It reports the p50 and p99 latency in microseconds.

import (
	"context"
	"crypto/rand"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func BenchmarkOneRecordInFlight(b *testing.B) {
	c := StartCluster(b, 3, WithProperty("min.insync.replicas", "2"))
	maxFlush := fmt.Sprint(int64(math.MaxInt64))
	for _, mode := range []struct {
		name    string
		configs map[string]*string
	}{
		{"fsync", nil},
		{"pagecache", map[string]*string{"flush.messages": &maxFlush}},
	} {
		topic := "lat-" + mode.name
		c.CreateTopicRF(b, topic, 1, 3, mode.configs)
		b.Run(mode.name, func(b *testing.B) {
			cl := c.Client(b, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
			value := make([]byte, 1024)
			rand.Read(value)
			ctx := context.Background()
			for range 50 { // warm up: metadata, producer id, connections, ISR
				if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
					b.Fatal(err)
				}
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}
