package integration

// A rolling restart of three real processes (P8 item 8): each node in turn gets
// SIGTERM (controlled shutdown moves its leaderships first), exits 0, restarts with the
// same data directory, and the next waits until every ISR is full again. An acks=all
// idempotent producer and a group consumer run throughout.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// rollingClients are the producer and consumer of the rolling restart, with what they
// saw.
type rollingClients struct {
	mu               sync.Mutex
	acked, seen      map[string]bool
	produceErrs      []error
	consumeRetriable int
	consumeFatal     []error
	stop             chan struct{}
	wg               sync.WaitGroup
}

func (r *rollingClients) run(t *testing.T, c *procCluster, topic string) {
	prod, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.DefaultProduceTopic(topic), kgo.DialTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.ConsumerGroup("rolling"), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DialTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	r.wg.Add(2)
	go func() {
		defer r.wg.Done()
		defer prod.Close()
		for i := 0; i < 1_000_000; i++ {
			select {
			case <-r.stop:
				return
			default:
			}
			v := fmt.Sprintf("r-%07d", i)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte(v), Value: []byte(v)}).FirstErr()
			cancel()
			r.mu.Lock()
			if err == nil {
				r.acked[v] = true
			} else {
				r.produceErrs = append(r.produceErrs, err)
			}
			r.mu.Unlock()
		}
	}()
	go func() {
		defer r.wg.Done()
		defer cons.Close()
		for {
			select {
			case <-r.stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			fs := cons.PollFetches(ctx)
			cancel()
			r.mu.Lock()
			for _, e := range fs.Errors() {
				switch {
				case errors.Is(e.Err, context.DeadlineExceeded), errors.Is(e.Err, context.Canceled), errors.Is(e.Err, kgo.ErrClientClosed):
				case kerr.IsRetriable(e.Err):
					r.consumeRetriable++
				default:
					r.consumeFatal = append(r.consumeFatal, fmt.Errorf("%s-%d: %w", e.Topic, e.Partition, e.Err))
				}
			}
			fs.EachRecord(func(rec *kgo.Record) { r.seen[string(rec.Value)] = true })
			r.mu.Unlock()
		}
	}()
}

// fullISR returns nil once topic has partitions partitions, each with a leader and
// every one of the three brokers in its ISR.
func (c *procCluster) fullISR(topic string, partitions int) error {
	st, err := c.describe(topic)
	if err != nil {
		return err
	}
	if len(st.partitions) != partitions {
		return fmt.Errorf("%d partitions", len(st.partitions))
	}
	for id, p := range st.partitions {
		if p.Leader < 0 || len(p.ISR) != 3 {
			return fmt.Errorf("partition %d: leader %d, ISR %v", id, p.Leader, p.ISR)
		}
	}
	return nil
}

func (r *rollingClients) counts() (acked, seen int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.acked), len(r.seen)
}

// TestProcessRollingRestart restarts the three nodes of a real cluster one after
// another while the clients run: the producer sees no error (kgo retries Kafka's
// retriable ones), the consumer no error but retriable ones, and every acknowledged
// record is consumed.
func TestProcessRollingRestart(t *testing.T) {
	t.Parallel()
	bin := procBuildPetrel(t)
	c := procStartCluster(t, bin)
	const topic = "roll"
	c.petrel(t, "topics", "create", topic, "--partitions", "3", "--replication-factor", "3")
	full := func() error { return c.fullISR(topic, 3) }
	testwait.ForWhat(t, 15*time.Second, "the topic with full ISRs", full)

	r := &rollingClients{acked: map[string]bool{}, seen: map[string]bool{}, stop: make(chan struct{})}
	r.run(t, c, topic)
	stopped := false
	stopClients := func() {
		if !stopped {
			stopped = true
			close(r.stop)
			r.wg.Wait()
		}
	}
	t.Cleanup(stopClients)
	waitProgress := func(what string) {
		a0, s0 := r.counts()
		testwait.ForWhat(t, 30*time.Second, what, func() error {
			if a, s := r.counts(); a < a0+100 || s < s0+100 {
				return fmt.Errorf("acked %d -> %d, consumed %d -> %d", a0, a, s0, s)
			}
			return nil
		})
	}
	waitProgress("the clients under way")

	for _, n := range c.nodes {
		start := time.Now()
		n.signal(t, syscall.SIGTERM)
		if st := n.waitExit(t, 20*time.Second); !st.Success() {
			t.Fatalf("node-%d exited with %s after SIGTERM", n.id, st)
		}
		exited := time.Since(start)
		n.start(t)
		testwait.ForWhat(t, 45*time.Second, fmt.Sprintf("node-%d back with full ISRs", n.id), func() error {
			if err := n.exited(); err != nil {
				return testwait.Permanent(err)
			}
			return full()
		})
		t.Logf("node-%d: exited %s after SIGTERM, back in every ISR %s after it", n.id, exited.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
		waitProgress(fmt.Sprintf("the clients progressing after node-%d's restart", n.id))
	}

	// The consumer must read every acknowledged record.
	testwait.ForWhat(t, 30*time.Second, "every acknowledged record consumed", func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.acked) == 0 {
			return errors.New("nothing acknowledged")
		}
		var missing []string
		for v := range r.acked {
			if !r.seen[v] {
				missing = append(missing, v)
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			return fmt.Errorf("%d acknowledged records not consumed yet (first %s)", len(missing), missing[0])
		}
		return nil
	})
	stopClients()
	r.mu.Lock()
	defer r.mu.Unlock()
	// Records acknowledged after the last check are not required: the consumer stopped.
	t.Logf("rolling restart of 3 processes: %d records acknowledged, %d consumed; client errors: producer %d, consumer %d retriable and %d other",
		len(r.acked), len(r.seen), len(r.produceErrs), r.consumeRetriable, len(r.consumeFatal))
	if len(r.produceErrs) > 0 {
		t.Errorf("the producer saw %d errors, first: %v", len(r.produceErrs), r.produceErrs[0])
	}
	if len(r.consumeFatal) > 0 {
		t.Errorf("the consumer saw %d non-retriable errors, first: %v", len(r.consumeFatal), r.consumeFatal[0])
	}
}
