package integration

// The measurement of issue P7: transactional produce (transactions of 100 records of
// 1 KiB) against idempotent produce, acks=all, replication factor 3
// (min.insync.replicas 2), in one run on one cluster, rounds alternating. Run it with
//
//	go test ./integration/ -run '^$' -bench BenchmarkTransactionalProduce -benchtime 10x
//
// It reports each mode's MB/s, the ratio transactional/idempotent and the p50 and p99
// of the commit (EndTransaction) latency.

import (
	"context"
	"crypto/rand"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// benchTxnSize is the records per transaction; benchTxnsPerRound the transactions of
// one round.
const (
	benchTxnSize      = 100
	benchTxnsPerRound = 20
)

func BenchmarkTransactionalProduce(b *testing.B) {
	c := StartCluster(b, 3, WithProperty("min.insync.replicas", "2"))
	const topic = "bench-txn"
	c.CreateTopicRF(b, topic, 6, 3, nil)
	value := make([]byte, 1024)
	rand.Read(value)
	idem := c.Client(b, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	txn := c.Client(b, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.TransactionalID("bench-txn"))
	ctx := context.Background()
	produce := func(cl *kgo.Client, n int) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var firstErr error
		for range n {
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
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
	}
	var commits []time.Duration
	txnRound := func() time.Duration {
		start := time.Now()
		for range benchTxnsPerRound {
			if err := txn.BeginTransaction(); err != nil {
				b.Fatal(err)
			}
			produce(txn, benchTxnSize)
			t0 := time.Now()
			if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
				b.Fatal(err)
			}
			commits = append(commits, time.Since(t0))
		}
		return time.Since(start)
	}
	idemRound := func() time.Duration {
		start := time.Now()
		produce(idem, benchTxnSize*benchTxnsPerRound)
		return time.Since(start)
	}
	txnRound() // warm up: metadata, producer ids, coordinators
	idemRound()
	commits = commits[:0]
	var tookTxn, tookIdem time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%2 == 0 {
			tookTxn += txnRound()
			tookIdem += idemRound()
		} else {
			tookIdem += idemRound()
			tookTxn += txnRound()
		}
	}
	b.StopTimer()
	mb := float64(b.N*benchTxnSize*benchTxnsPerRound) * 1024 / 1e6
	t, id := mb/tookTxn.Seconds(), mb/tookIdem.Seconds()
	slices.Sort(commits)
	b.ReportMetric(t, "transactional-MB/s")
	b.ReportMetric(id, "idempotent-MB/s")
	b.ReportMetric(t/id, "ratio")
	b.ReportMetric(float64(commits[len(commits)/2].Microseconds())/1000, "commit-p50-ms")
	b.ReportMetric(float64(commits[len(commits)*99/100].Microseconds())/1000, "commit-p99-ms")
}
