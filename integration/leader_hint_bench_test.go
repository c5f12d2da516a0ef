package integration

// The controlled-stop measurements (issue P22 item 3): a 3-node in-process cluster, a
// one-partition RF 3 topic, a default kgo producer writing every 2 ms; the
// partition's leader stops gracefully (Broker.Shutdown, what SIGTERM runs), and the
// round measures from the stop to
//
//   - BenchmarkControlledStopFirstAck: the producer's first Produce answer read from
//     another broker (kgo's HookBrokerRead);
//   - BenchmarkControlledStopFirstFetch: a default kgo consumer's first record batch
//     read from another broker (kgo's HookFetchBatchRead).
//
// With KIP-951's hints the stopping leader's NOT_LEADER_OR_FOLLOWER answers name the
// new leader, and kgo moves at once; a producer whose connection closed before it was
// answered (before broker/leader_hint_linger.go, one round in four to eight) waits
// for a metadata refresh, which comes MetadataMinAge (5 s) after its previous one.
// Each round's figure is printed; the metrics are their median, min and max. Run:
//
//	go test -run '^$' -bench 'BenchmarkControlledStop' -benchtime 8x -timeout 15m ./integration/
//
// Nothing here asserts a speed.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// produceReads records when a client read a successful Produce answer from each broker.
type produceReads struct {
	mu   sync.Mutex
	from map[int32][]time.Time
}

func (r *produceReads) OnBrokerRead(meta kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key != int16(kmsg.Produce) || err != nil {
		return
	}
	r.mu.Lock()
	r.from[meta.NodeID] = append(r.from[meta.NodeID], time.Now())
	r.mu.Unlock()
}

// firstAfter is the first Produce answer read after since from a broker other than not.
func (r *produceReads) firstAfter(since time.Time, not int32) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var first time.Time
	for id, ts := range r.from {
		if id == not {
			continue
		}
		for _, at := range ts {
			if at.After(since) && (first.IsZero() || at.Before(first)) {
				first = at
			}
		}
	}
	return first, !first.IsZero()
}

// produceEvery2ms produces a record to topic every 2 ms (values counting up) until
// ctx ends, calling acked with each acknowledged value; the function returned waits
// for the loop to end.
func produceEvery2ms(ctx context.Context, cl *kgo.Client, topic string, acked func(value string)) func() {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			v := strconv.Itoa(i)
			cl.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}, func(_ *kgo.Record, err error) {
				if err == nil {
					acked(v)
				}
			})
			time.Sleep(2 * time.Millisecond) // the producer's pace, not a synchronisation
		}
	}()
	return wg.Wait
}

func BenchmarkControlledStopFirstAck(b *testing.B) {
	var series []time.Duration
	for b.Loop() {
		series = append(series, controlledStopFirstAck(b))
	}
	reportRounds(b, series)
}

func BenchmarkControlledStopFirstFetch(b *testing.B) {
	var series []time.Duration
	for b.Loop() {
		series = append(series, controlledStopFirstFetch(b))
	}
	reportRounds(b, series)
}

// reportRounds prints each round's figure (on stdout: the benchmark's log keeps only
// its first lines, the nodes') and reports their median, max and min.
func reportRounds(b *testing.B, series []time.Duration) {
	ms := make([]int64, len(series))
	for i, d := range series {
		ms[i] = d.Milliseconds()
	}
	fmt.Printf("%s rounds (ms): %v\n", b.Name(), ms)
	slices.Sort(series)
	b.ReportMetric(float64(series[len(series)/2].Milliseconds()), "median-ms")
	b.ReportMetric(float64(series[len(series)-1].Milliseconds()), "max-ms")
	b.ReportMetric(float64(series[0].Milliseconds()), "min-ms")
}

// killRest kills c's running nodes at the end of a round, so that the next round
// does not share the cores with this one's cluster.
func killRest(c *Cluster) {
	for _, i := range c.running() {
		c.Kill(i)
	}
}

// controlledStopFirstAck runs one round on a fresh cluster and returns its figure.
func controlledStopFirstAck(b *testing.B) time.Duration {
	c := StartCluster(b, 3)
	const topic = "stop-first-ack"
	c.CreateTopicRF(b, topic, 1, 3, nil)
	reads := &produceReads{from: map[int32][]time.Time{}}
	cl := c.Client(b, kgo.WithHooks(reads), kgo.MaxVersions(kversion.Stable()))
	ctx, cancel := context.WithCancel(context.Background())
	wait := produceEvery2ms(ctx, cl, topic, func(string) {})
	defer func() {
		cancel()
		wait()
		cl.Close()
		killRest(c)
	}()
	return stopLeaderOf(b, c, topic, reads)
}

// stopLeaderOf waits until the client has been reading answers into reads for 6 s
// (kgo's own metadata refreshes, as at the first produce to a topic, are behind it),
// stops topic's partition 0's leader gracefully, and returns the time from the stop to
// the first answer read from another broker.
func stopLeaderOf(b *testing.B, c *Cluster, topic string, reads *produceReads) time.Duration {
	settle := time.Now().Add(6 * time.Second)
	testwait.For(b, testTimeout, func() error {
		if _, ok := reads.firstAfter(settle, -1); !ok {
			return errNotYet
		}
		return nil
	})
	c.WaitConverged()
	leader := c.Node(0).Image().Topic(topic).Partitions[0].Leader
	stopped := time.Now()
	stopErr := stopInBackground(c, int(leader))
	first := awaitReadAfter(b, reads, stopped, leader)
	if err := <-stopErr; err != nil {
		b.Fatalf("node-%d: shutdown: %v", leader, err)
	}
	return first.Sub(stopped)
}

// stopInBackground starts node i's graceful shutdown (as Cluster.Stop) on another
// goroutine and returns where its error arrives; the node counts as stopped from now.
func stopInBackground(c *Cluster, i int) <-chan error {
	node := c.mustRun(i)
	node.running = false
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		errc <- node.broker.Shutdown(ctx)
	}()
	return errc
}

// batchReads records when a client read a record batch from each broker.
type batchReads struct{ produceReads }

func (r *batchReads) OnFetchBatchRead(meta kgo.BrokerMetadata, _ string, _ int32, _ kgo.FetchBatchMetrics) {
	r.mu.Lock()
	r.from[meta.NodeID] = append(r.from[meta.NodeID], time.Now())
	r.mu.Unlock()
}

// controlledStopFirstFetch runs one consumer round on a fresh cluster and returns its
// figure: from the stop to the consumer's first record batch read from another broker.
func controlledStopFirstFetch(b *testing.B) time.Duration {
	c := StartCluster(b, 3)
	const topic = "stop-first-fetch"
	c.CreateTopicRF(b, topic, 1, 3, nil)
	pr := c.Client(b, kgo.MaxVersions(kversion.Stable()))
	reads := &batchReads{produceReads{from: map[int32][]time.Time{}}}
	cons := c.Client(b, kgo.WithHooks(reads), kgo.MaxVersions(kversion.Stable()),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithCancel(context.Background())
	wait := produceEvery2ms(ctx, pr, topic, func(string) {})
	var polls sync.WaitGroup
	polls.Add(1)
	go func() {
		defer polls.Done()
		for ctx.Err() == nil {
			cons.PollFetches(ctx)
		}
	}()
	defer func() {
		cancel()
		wait()
		polls.Wait()
		pr.Close()
		cons.Close()
		killRest(c)
	}()
	return stopLeaderOf(b, c, topic, &reads.produceReads)
}
