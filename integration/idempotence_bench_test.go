package integration

// The measurement of issue P6: idempotent against plain produce, acks=all, replication
// factor 3 (min.insync.replicas 2), 1 KiB random records, in one run on one cluster.
// Rounds alternate between the two producers so that drift (page cache, GC, a busy
// machine) falls on both alike. Run it with
//
//	go test ./integration/ -run '^$' -bench BenchmarkIdempotentProduce -benchtime 20x
//
// It reports each mode's MB/s and the ratio idempotent/plain.

import (
	"context"
	"crypto/rand"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// benchRecordsPerRound is how many 1 KiB records each mode sends per round.
const benchRecordsPerRound = 5000

func BenchmarkIdempotentProduce(b *testing.B) {
	c := StartCluster(b, 3, WithProperty("min.insync.replicas", "2"))
	const topic = "bench-idem"
	c.CreateTopicRF(b, topic, 6, 3, nil)
	values := make([][]byte, 256)
	for i := range values {
		values[i] = make([]byte, 1024)
		rand.Read(values[i])
	}
	clients := map[bool]*kgo.Client{
		true:  c.Client(b, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks())),
		false: c.Client(b, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite()),
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
	round(clients[true]) // warm up both: metadata, producer id, connections
	round(clients[false])
	var took = map[bool]time.Duration{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, idem := range []bool{i%2 == 0, i%2 != 0} {
			took[idem] += round(clients[idem])
		}
	}
	b.StopTimer()
	mb := float64(b.N*benchRecordsPerRound) * 1024 / 1e6
	idem, plain := mb/took[true].Seconds(), mb/took[false].Seconds()
	b.ReportMetric(idem, "idempotent-MB/s")
	b.ReportMetric(plain, "plain-MB/s")
	b.ReportMetric(idem/plain, "ratio")
}
