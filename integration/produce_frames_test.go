package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestProducePooledFramesKeepStoredData checks the ownership rule of the rpc frame
// pools end to end: produce request frames go back to the pool when the handler
// returns, and a follower's fetch response frames once the batches are appended. Under
// -race every released frame is overwritten before it is reused, so a record still
// aliasing one (on the leader, in an acks=all waiter, or on a follower) would show up
// here as corrupt data. Two producers (acks=all idempotent, acks=1 plain) write
// records of random sizes and contents concurrently to a 2-partition RF 3 topic; then
// every record is consumed and compared, and the three replicas' logs must be
// byte-identical.
func TestProducePooledFramesKeepStoredData(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, WithProperty("min.insync.replicas", "2"))
	const topic = "pooled-frames"
	const perProducer = 300
	c.CreateTopicRF(t, topic, 2, 3, nil)
	sent := map[string][]byte{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	pctx, pcancel := context.WithTimeout(testContext(t), 30*time.Second)
	defer pcancel()
	produce := func(name string, opts ...kgo.Opt) {
		defer wg.Done()
		cl := c.Client(t, append(opts, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
			kgo.RecordDeliveryTimeout(30*time.Second))...)
		var pwg sync.WaitGroup
		var firstErr error
		for i := range perProducer {
			v := make([]byte, 100+mrand.IntN(3000))
			rand.Read(v)
			key := fmt.Sprintf("%s-%04d", name, i)
			mu.Lock()
			sent[key] = v
			mu.Unlock()
			pwg.Add(1)
			cl.Produce(pctx, &kgo.Record{Key: []byte(key), Value: v}, func(_ *kgo.Record, err error) {
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
				}
				pwg.Done()
			})
		}
		acked := make(chan struct{})
		go func() { pwg.Wait(); close(acked) }()
		select {
		case <-acked:
		case <-time.After(45 * time.Second): // kgo retries idempotent batches past their delivery timeout
			t.Errorf("%s: records not acknowledged within 45 s", name)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if firstErr != nil {
			t.Errorf("%s: %v", name, firstErr)
		}
	}
	wg.Add(2)
	go produce("all", kgo.RequiredAcks(kgo.AllISRAcks()))
	go produce("one", kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	wg.Wait()
	if t.Failed() {
		return
	}

	cl := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	ctx, cancel := context.WithTimeout(testContext(t), 30*time.Second)
	defer cancel()
	for got < len(sent) {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", got, len(sent), err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			want, ok := sent[string(r.Key)]
			switch {
			case !ok:
				t.Fatalf("record with key %q (%d bytes), never sent", r.Key, len(r.Key))
			case !bytes.Equal(r.Value, want):
				t.Fatalf("record %s at %d-%d: stored value differs from the one produced", r.Key, r.Partition, r.Offset)
			}
			got++
		})
	}
	if got != len(sent) {
		t.Fatalf("consumed %d records, produced %d", got, len(sent))
	}

	for p := int32(0); p < 2; p++ {
		var leaderLog []byte
		var leaderHW int64
		testwait.For(t, 20*time.Second, func() error {
			logs := make([][]byte, 3)
			hws := make([]int64, 3)
			for i := range 3 {
				hw, data, err := replicaLog(t, c, i, topic, p)
				if err != nil {
					return err
				}
				logs[i], hws[i] = data, hw
			}
			for i := 1; i < 3; i++ {
				if hws[i] != hws[0] {
					return fmt.Errorf("partition %d: high watermarks %v", p, hws)
				}
				if !bytes.Equal(logs[i], logs[0]) {
					return fmt.Errorf("partition %d: node-%d's log differs from node-0's (%d and %d bytes)", p, i, len(logs[i]), len(logs[0]))
				}
			}
			leaderLog, leaderHW = logs[0], hws[0]
			return nil
		})
		if len(leaderLog) == 0 || leaderHW == 0 {
			t.Fatalf("partition %d is empty", p)
		}
	}
}
