package integration

// The measurement of issue P11: the cost of metrics on the produce hot path. acks=1
// produce throughput, 1 KiB random records, into two one-node clusters started in the
// same run, one with per-partition series (petrel.metrics.per.partition.enable=true,
// the default) and one without; rounds alternate so that drift falls on both alike.
// Run it with
//
//	go test ./integration/ -run '^$' -bench BenchmarkProduceMetricsCost -benchtime 20x
//
// It reports each mode's MB/s and the ratio with/without.

import (
	"context"
	"crypto/rand"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func BenchmarkProduceMetricsCost(b *testing.B) {
	const topic = "bench-metrics"
	clients := map[bool]*kgo.Client{}
	for _, perPartition := range []bool{true, false} {
		value := "false"
		if perPartition {
			value = "true"
		}
		c := StartCluster(b, 1, WithProperty("petrel.metrics.per.partition.enable", value))
		c.CreateTopicRF(b, topic, 6, 1, nil)
		clients[perPartition] = c.Client(b, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.LeaderAck()),
			kgo.DisableIdempotentWrite())
	}
	values := make([][]byte, 256)
	for i := range values {
		values[i] = make([]byte, 1024)
		rand.Read(values[i])
	}
	round := func(cl *kgo.Client) time.Duration {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var firstErr error
		start := time.Now()
		for i := range benchRecordsPerRound {
			wg.Add(1)
			cl.Produce(context.Background(), &kgo.Record{Value: values[i%len(values)]}, func(_ *kgo.Record, err error) {
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
				}
				wg.Done()
			})
		}
		wg.Wait()
		if firstErr != nil {
			b.Fatal(firstErr)
		}
		return time.Since(start)
	}
	round(clients[true])
	round(clients[false])
	took := map[bool]time.Duration{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, on := range []bool{i%2 == 0, i%2 != 0} {
			took[on] += round(clients[on])
		}
	}
	b.StopTimer()
	mb := float64(b.N*benchRecordsPerRound) * 1024 / 1e6
	on, off := mb/took[true].Seconds(), mb/took[false].Seconds()
	b.ReportMetric(on, "per-partition-MB/s")
	b.ReportMetric(off, "broker-wide-MB/s")
	b.ReportMetric(on/off, "ratio")
}
