package integration

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestChaosKillRestartUnderLoad kills (or stops gracefully) a random node per round
// while a producer writes with acks=all (no client retries, so every acknowledgement is
// unambiguous), restarts it, and waits for the ISR to be whole. At the end: every
// acknowledged record is readable exactly once at its acknowledged offset, and the
// replicas are byte-identical below the high watermark (each replica's log and high
// watermark read with a consumer's Fetch v12 sent to its node, see replicaLog).
//
// Rounds: PETREL_CHAOS_ROUNDS (default 3 in CI; a long run is e.g. 50). Seed:
// PETREL_CHAOS_SEED (printed, so a failure can be replayed).
func TestChaosKillRestartUnderLoad(t *testing.T) {
	t.Parallel()
	rounds := 3
	if v, err := strconv.Atoi(os.Getenv("PETREL_CHAOS_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("PETREL_CHAOS_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("chaos: %d rounds, seed %d (PETREL_CHAOS_SEED=%d replays it)", rounds, seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	c := StartCluster(t, 3,
		WithProperty("min.insync.replicas", "2"),
		WithProperty("broker.session.timeout.ms", "2000"),
		WithProperty("broker.heartbeat.interval.ms", "250"),
		WithProperty("replica.lag.time.max.ms", "2000"),
	)
	const partitions = 3
	c.CreateTopicRF(t, "chaos", partitions, 3, nil)
	testwait.For(t, 20*time.Second, func() error {
		for i := range 3 {
			for p := int32(0); p < partitions; p++ {
				if _, err := replicaLEO(t, c, i, "chaos", p); err != nil {
					return fmt.Errorf("node %d lacks chaos-%d: %w", i, p, err)
				}
			}
		}
		return nil
	})
	cl := c.Client(t, kgo.DefaultProduceTopic("chaos"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordRetries(0), kgo.RecordDeliveryTimeout(10*time.Second), kgo.MetadataMinAge(100*time.Millisecond))

	type ack struct {
		partition int32
		offset    int64
	}
	var mu sync.Mutex
	acked := map[string]ack{}
	stop := make(chan struct{})
	loadDone := make(chan struct{})
	go func() { // bounded load: at most 100 records in flight, stops with the test
		defer close(loadDone)
		inflight := make(chan struct{}, 100)
		for i := 0; ; i++ {
			select {
			case <-stop:
				for j := 0; j < cap(inflight); j++ {
					inflight <- struct{}{}
				}
				return
			case inflight <- struct{}{}:
			}
			value := fmt.Sprintf("r%07d", i)
			cl.Produce(context.Background(), &kgo.Record{Key: []byte(value), Value: []byte(value)}, func(r *kgo.Record, err error) {
				<-inflight
				if err == nil {
					mu.Lock()
					acked[value] = ack{r.Partition, r.Offset}
					mu.Unlock()
				}
			})
		}
	}()

	// A round ends when every partition has a leader and a whole ISR and the restarted
	// node is registered again with its replicas open (a node restarted within its
	// session timeout may still be listed in the ISR from before).
	wholeISR := func(observer, restarted int) error {
		if err := registeredAgain(c, observer, restarted); err != nil {
			return err
		}
		for p := int32(0); p < partitions; p++ {
			part, err := partitionIn(c, observer, "chaos", p)
			if err != nil {
				return err
			}
			if len(part.ISR) != 3 || part.Leader < 0 {
				return fmt.Errorf("chaos-%d: leader %d isr %v", p, part.Leader, part.ISR)
			}
			if _, err := replicaLEO(t, c, restarted, "chaos", p); err != nil {
				return fmt.Errorf("node %d has not opened chaos-%d: %w", restarted, p, err)
			}
		}
		return nil
	}
	for round := 0; round < rounds; round++ {
		victim := rng.IntN(3)
		observer := (victim + 1) % 3
		graceful := rng.IntN(3) == 0
		t.Logf("round %d: %s node %d", round, map[bool]string{true: "stopping", false: "killing"}[graceful], victim)
		if graceful {
			c.Stop(victim)
		} else {
			c.Kill(victim)
		}
		// Let the cluster fail over under load, then bring the node back.
		<-time.After(time.Duration(500+rng.IntN(1500)) * time.Millisecond)
		c.Start(victim)
		testwait.For(t, 60*time.Second, func() error { return wholeISR(observer, victim) })
	}
	close(stop)
	<-loadDone
	mu.Lock()
	defer mu.Unlock()
	if len(acked) == 0 {
		t.Fatal("nothing was acknowledged")
	}

	// Replicas converge and are byte-identical below the high watermark.
	ends := map[int32]int64{}
	testwait.For(t, 30*time.Second, func() error {
		for p := int32(0); p < partitions; p++ {
			var logs [][]byte
			var hws []int64
			for i := range 3 {
				hw, data, err := replicaLog(t, c, i, "chaos", p)
				if err != nil {
					return fmt.Errorf("node %d, chaos-%d: %w", i, p, err)
				}
				hws, logs = append(hws, hw), append(logs, data)
			}
			if hws[0] != hws[1] || hws[1] != hws[2] {
				return fmt.Errorf("chaos-%d: high watermarks %v", p, hws)
			}
			if !bytes.Equal(logs[0], logs[1]) || !bytes.Equal(logs[1], logs[2]) {
				return fmt.Errorf("chaos-%d: replica logs differ below the HW", p)
			}
			ends[p] = hws[0]
		}
		return nil
	})

	// Every acknowledged record exactly once, at its acknowledged offset.
	seen := map[string][]ack{}
	cons := c.Client(t, kgo.ConsumeTopics("chaos"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	read := map[int32]int64{}
	done := func() bool {
		for p, end := range ends {
			if read[p] < end {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cons.PollFetches(testContext(t))
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen[string(r.Value)] = append(seen[string(r.Value)], ack{r.Partition, r.Offset})
			read[r.Partition] = max(read[r.Partition], r.Offset+1)
		})
	}
	for value, a := range acked {
		if got := seen[value]; len(got) != 1 || got[0] != a {
			t.Fatalf("acknowledged %s at %v, found at %v (seed %d)", value, a, got, seed)
		}
	}
	t.Logf("chaos: %d records acknowledged and verified over %d rounds", len(acked), rounds)
}
