package integration

// Issue P13's scenario with three real `petrel server` processes and Kafka's defaults
// (broker.session.timeout.ms 9000, broker.heartbeat.interval.ms 2000): a 3-partition
// topic with replication factor 3 and min.insync.replicas=2, one producer with acks=all
// producing sequence-numbered records while the leader of partition 0 is killed -9 and
// restarted 6 s later, then the controller the same way. With one broker of three down
// and min ISR 2 every error a producer sees is retriable, so Kafka keeps such a producer
// writing with no failure at all: no record may fail to the application, and every
// acknowledged record must be read back at its offset. The test also reports the
// leaderless window of each partition the dead broker led: from the kill to the first
// acknowledgement of a write to it from its next leader.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	// fovTopic is the scenario's topic.
	fovTopic = "failover"
	// fovPartitions is its partition count.
	fovPartitions = 3
	// fovDown is how long a killed broker stays down (the 6 s).
	fovDown = 6 * time.Second
	// fovRate is records per second the producer offers (bounded: the machine is
	// shared); fovTick is the pace.
	fovRate = 2000
	fovTick = 50 * time.Millisecond
	// fovProgress is how many deliveries show a producer is writing (before the first
	// kill, and after the last restart).
	fovProgress = 200
	// fovSessionTimeout is Kafka's default broker.session.timeout.ms, which the
	// scenario's brokers run with.
	fovSessionTimeout = 9 * time.Second
)

// fovAck is one acknowledged record and when its acknowledgement arrived.
type fovAck struct {
	seq       int
	partition int32
	offset    int64
	at        time.Time
}

// fovResult collects a producer's outcomes. Safe for concurrent use.
type fovResult struct {
	mu     sync.Mutex
	acked  []fovAck
	failed map[string]int // error text -> records
	// delivered counts deliveries a client reports before it can name the records
	// (kcat); progress is the larger of it and len(acked).
	delivered int
}

func (r *fovResult) progressed() {
	r.mu.Lock()
	r.delivered++
	r.mu.Unlock()
}

// progress is how many records are known delivered so far.
func (r *fovResult) progress() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return max(len(r.acked), r.delivered)
}

func (r *fovResult) ack(a fovAck) {
	r.mu.Lock()
	r.acked = append(r.acked, a)
	r.mu.Unlock()
}

func (r *fovResult) fail(err error) {
	r.mu.Lock()
	if r.failed == nil {
		r.failed = map[string]int{}
	}
	r.failed[err.Error()]++
	r.mu.Unlock()
}

func (r *fovResult) counts() (acked, failed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.failed {
		failed += n
	}
	return len(r.acked), failed
}

// fovValue is record seq's value; fovSeq parses it back.
func fovValue(seq int) string { return "fov-" + strconv.Itoa(seq) }

func fovSeq(v []byte) (int, bool) {
	s, ok := strings.CutPrefix(string(v), "fov-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// fovProducer produces fovValue(0), fovValue(1), ... to fovTopic on addrs at about
// fovRate until stop is closed, then waits for every outstanding record and returns.
// Each record's outcome goes to res.
type fovProducer func(t *testing.T, addrs []string, stop <-chan struct{}, res *fovResult)

// fovLogWriter sends a client's log lines to t.Log.
type fovLogWriter struct {
	t      *testing.T
	prefix string
}

func (w fovLogWriter) Write(p []byte) (int, error) {
	w.t.Log(w.prefix + strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// fovPace calls produce(seq) for consecutive seqs, fovRate per second, until stop.
func fovPace(stop <-chan struct{}, produce func(seq int)) {
	tick := time.NewTicker(fovTick)
	defer tick.Stop()
	perTick := int(float64(fovRate) * fovTick.Seconds())
	seq := 0
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		for range perTick {
			produce(seq)
			seq++
		}
	}
}

// kgoFailoverProducer is franz-go with its defaults (acks=all, unlimited record
// retries, UnknownTopicRetries 4), a 60 s delivery timeout, and AlwaysRetryEOF: by
// default kgo does not retry an EOF on a connection's first response (it takes it for a
// SASL or TLS mistake), and a kill -9 landing while a fresh connection's first request
// is in flight is exactly that; without the option 2 runs in 16 failed the records
// waiting on such a Metadata request (docs/compatibility.md). Apache Kafka killed the
// same way gives the same EOF.
func kgoFailoverProducer(t *testing.T, addrs []string, stop <-chan struct{}, res *fovResult) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(fovTopic),
		kgo.RecordRetries(math.MaxInt64), kgo.RecordDeliveryTimeout(60*time.Second), kgo.AlwaysRetryEOF(),
		kgo.WithLogger(kgo.BasicLogger(fovLogWriter{t, "kgo "}, kgo.LogLevelWarn, nil)))
	if err != nil {
		t.Error(err)
		return
	}
	defer cl.Close()
	ctx := context.Background()
	fovPace(stop, func(seq int) {
		cl.Produce(ctx, &kgo.Record{Value: []byte(fovValue(seq))}, func(r *kgo.Record, err error) {
			if err != nil {
				res.fail(err)
				return
			}
			res.ack(fovAck{seq: seq, partition: r.Partition, offset: r.Offset, at: time.Now()})
		})
	})
	fctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := cl.Flush(fctx); err != nil {
		t.Errorf("kgo: flushing the last records: %v", err)
	}
}

// TestProcessFailoverClients runs the scenario for each client.
func TestProcessFailoverClients(t *testing.T) {
	t.Parallel()
	bin := procBuildPetrel(t)
	t.Run("kgo", func(t *testing.T) { runFailoverScenario(t, bin, kgoFailoverProducer) })
	t.Run("sarama", func(t *testing.T) { runFailoverScenario(t, bin, saramaFailoverProducer) })
	t.Run("kafka-go", func(t *testing.T) { runFailoverScenario(t, bin, kafkaGoFailoverProducer) })
	t.Run("kcat", func(t *testing.T) {
		kcatBinary(t)
		runFailoverScenario(t, bin, kcatFailoverProducer)
	})
}

// fovKill is one kill -9 of the scenario: the victim, when, and the partitions it led
// with their leader epochs at that moment.
type fovKill struct {
	victim int32
	at     time.Time
	led    map[int32]int32 // partition -> leader epoch
	role   string          // ", the controller" or ""
	// elected is when Metadata first showed each partition led in a later epoch.
	elected map[int32]time.Time
}

// fovWatchElections asks a surviving broker for Metadata every 50 ms from the kill
// until each partition k.led names has a leader in a later epoch, and sends when each
// got it.
func (c *procCluster) fovWatchElections(k fovKill) <-chan map[int32]time.Time {
	out := make(chan map[int32]time.Time, 1)
	survivor := c.nodes[(k.victim+1)%int32(len(c.nodes))]
	go func() {
		seen := map[int32]time.Time{}
		defer func() { out <- seen }()
		cl, err := kgo.NewClient(kgo.SeedBrokers(survivor.kafkaAddr), kgo.DialTimeout(time.Second))
		if err != nil {
			return
		}
		defer cl.Close()
		deadline := time.Now().Add(60 * time.Second)
		for len(seen) < len(k.led) && time.Now().Before(deadline) {
			req := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(fovTopic)
			req.Topics = append(req.Topics, rt)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			resp, err := cl.SeedBrokers()[0].Request(ctx, req)
			cancel()
			now := time.Now()
			if err == nil {
				for _, t := range resp.(*kmsg.MetadataResponse).Topics {
					for _, p := range t.Partitions {
						epoch, led := k.led[p.Partition]
						if _, done := seen[p.Partition]; led && !done && p.Leader >= 0 && p.LeaderEpoch > epoch {
							seen[p.Partition] = now
						}
					}
				}
			}
			time.Sleep(50 * time.Millisecond) // polling Metadata: nothing to wait on
		}
	}()
	return out
}

func runFailoverScenario(t *testing.T, bin string, produce fovProducer) {
	c := procStartClusterWith(t, bin,
		"broker.session.timeout.ms="+strconv.Itoa(int(fovSessionTimeout.Milliseconds())),
		"broker.heartbeat.interval.ms=2000")
	out := c.petrel(t, "topics", "create", fovTopic, "--partitions", strconv.Itoa(fovPartitions),
		"--replication-factor", "3", "--config", "min.insync.replicas=2")
	if strings.TrimSpace(out) != "Created topic "+fovTopic+"." {
		t.Fatalf("topics create printed %q", out)
	}
	testwait.ForWhat(t, 20*time.Second, "every partition led with a full ISR", func() error {
		_, err := c.fovPartitions(func(p kadm.PartitionDetail) error {
			if p.Leader < 0 || len(p.ISR) != 3 {
				return fmt.Errorf("partition %d: leader %d, ISR %v", p.Partition, p.Leader, p.ISR)
			}
			return nil
		})
		return err
	})

	res := &fovResult{}
	stop := make(chan struct{})
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		produce(t, c.addrs(), stop, res)
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-done
	}()
	testwait.ForWhat(t, 30*time.Second, "the producer's first acknowledgements", func() error {
		if n := res.progress(); n < fovProgress {
			return fmt.Errorf("%d acknowledged", n)
		}
		return nil
	})

	var kills []fovKill
	// The leader of partition 0, then the controller: each killed -9, down for fovDown,
	// restarted, and waited for until it is ready (in Metadata again).
	for round := range 2 {
		m, err := c.brokerMetadata(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		parts, err := c.fovPartitions(nil)
		if err != nil {
			t.Fatal(err)
		}
		victim := m.Controller
		if round == 0 {
			// The leader of partition 0, or of the first partition led by a broker that
			// is not the controller: the second round kills the controller.
			for p := range int32(fovPartitions) {
				if parts[p].Leader != m.Controller {
					victim = parts[p].Leader
					break
				}
			}
		}
		k := fovKill{victim: victim, led: map[int32]int32{}}
		if victim == m.Controller {
			k.role = ", the controller"
		}
		for _, p := range parts {
			if p.Leader == victim {
				k.led[p.Partition] = p.LeaderEpoch
			}
		}
		node := c.nodes[victim]
		k.at = time.Now()
		node.signal(t, syscall.SIGKILL)
		node.waitExit(t, 10*time.Second)
		elected := c.fovWatchElections(k)
		kills = append(kills, k)
		t.Logf("round %d: killed broker %d (-9) %s into the run; it led partitions %v",
			round, victim, k.at.Sub(start).Round(time.Millisecond), slices.Sorted(maps.Keys(k.led)))
		// The scenario's downtime (what is tested, not a synchronisation).
		time.Sleep(fovDown)
		node.start(t)
		restarted := time.Now()
		// Until its old session expires the dead incarnation is still in Metadata: wait
		// for the new one's readiness in its log.
		testwait.ForWhat(t, procStartTimeout+fovSessionTimeout, fmt.Sprintf("broker %d ready again", victim), func() error {
			if err := node.exited(); err != nil {
				return testwait.Permanent(err)
			}
			if !strings.Contains(node.out.all(), "broker ready") {
				return errors.New("no \"broker ready\" line yet")
			}
			return nil
		})
		t.Logf("round %d: broker %d is ready %s after its restart", round, victim, time.Since(restarted).Round(time.Millisecond))
		select {
		case e := <-elected:
			for _, p := range slices.Sorted(maps.Keys(e)) {
				t.Logf("round %d: partition %d has a new leader in Metadata %s after the kill", round, p, e[p].Sub(k.at).Round(time.Millisecond))
			}
			k.elected = e
			kills[len(kills)-1] = k
		case <-time.After(60 * time.Second):
			t.Fatalf("round %d: the partitions broker %d led got no new leader within 60 s", round, victim)
		}
		testwait.ForWhat(t, 60*time.Second, fmt.Sprintf("broker %d back in every ISR", victim), func() error {
			_, err := c.fovPartitions(func(p kadm.PartitionDetail) error {
				if !slices.Contains(p.ISR, victim) {
					return fmt.Errorf("partition %d: ISR %v", p.Partition, p.ISR)
				}
				return nil
			})
			return err
		})
	}
	// Every partition a killed broker led takes writes again: a client's partitioner
	// may avoid a partition for a while after its leader changed (kgo's sticky one
	// picks among the partitions its last metadata called writable, refreshed at most
	// every 5 s), so the run goes on until each got an acknowledgement after Metadata
	// showed its new leader; the dead leader cannot have sent it. Clients that report
	// no offsets name no partitions either.
	testwait.ForWhat(t, 60*time.Second, "an acknowledged write to every partition a killed broker led, from its new leader", func() error {
		if res.noOffsets() {
			return nil
		}
		for i, k := range kills {
			for p := range k.led {
				if !res.ackedAfter(p, k.elected[p]) {
					return fmt.Errorf("kill %d: partition %d: no acknowledgement since its new leader", i, p)
				}
			}
		}
		return nil
	})
	// Some more producing on the healed cluster, then stop and drain.
	healed := res.progress()
	testwait.ForWhat(t, 30*time.Second, "acknowledgements after the last restart", func() error {
		if n := res.progress(); n < healed+fovProgress {
			return fmt.Errorf("%d acknowledged since", n-healed)
		}
		return nil
	})
	close(stop)
	select {
	case <-done:
	case <-time.After(120 * time.Second):
		t.Fatal("the producer did not finish its outstanding records within 120 s")
	}
	acked, failed := res.counts()
	t.Logf("produced for %s: %d acknowledged, %d failed to the application %v",
		time.Since(start).Round(time.Second), acked, failed, res.failed)

	epochs := c.fovCheckAcked(t, res)
	for i, k := range kills {
		for _, p := range slices.Sorted(maps.Keys(k.led)) {
			w, ok := res.leaderlessWindow(p, k, epochs)
			if !ok && res.noOffsets() {
				t.Logf("LEADERLESS WINDOW kill %d (broker %d%s): partition %d: new leader in Metadata %s after the kill (the client reports no offsets)",
					i, k.victim, k.role, p, k.elected[p].Sub(k.at).Round(time.Millisecond))
				continue
			}
			if !ok {
				t.Errorf("kill %d: partition %d got no acknowledged write from a new leader", i, p)
				continue
			}
			t.Logf("LEADERLESS WINDOW kill %d (broker %d%s): partition %d: first acknowledged write %s after the kill, new leader in Metadata after %s (broker.session.timeout.ms %s)",
				i, k.victim, k.role, p, w.Round(time.Millisecond), k.elected[p].Sub(k.at).Round(time.Millisecond), fovSessionTimeout)
		}
	}
	if failed != 0 {
		t.Errorf("%d records failed to the application (want 0): %v", failed, res.failed)
	}
}

// ackedAfter reports an acknowledgement of a write to partition p that arrived after at.
func (r *fovResult) ackedAfter(p int32, at time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range slices.Backward(r.acked) {
		if a.partition == p && a.at.After(at) {
			return true
		}
	}
	return false
}

// noOffsets reports a client that acknowledges records without offsets.
func (r *fovResult) noOffsets() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.acked) == 0 || r.acked[0].offset < 0
}

// fovAt is a record's place in fovTopic.
type fovAt struct {
	p int32
	o int64
}

// leaderlessWindow is the time from kill k to the first acknowledgement of a write to
// partition p by a later leader: the first acknowledged record stored in a leader epoch
// above the one at the kill (epochs: each offset's epoch as read back).
func (r *fovResult) leaderlessWindow(p int32, k fovKill, epochs map[fovAt]int32) (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	first := time.Time{}
	for _, a := range r.acked {
		if a.partition != p || !a.at.After(k.at) || epochs[fovAt{a.partition, a.offset}] <= k.led[p] {
			continue
		}
		if first.IsZero() || a.at.Before(first) {
			first = a.at
		}
	}
	return first.Sub(k.at), !first.IsZero()
}

// fovPartitions returns fovTopic's partitions from Metadata, checking each with check.
func (c *procCluster) fovPartitions(check func(kadm.PartitionDetail) error) (map[int32]kadm.PartitionDetail, error) {
	cl, err := c.procClient()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := kadm.NewClient(cl).Metadata(ctx, fovTopic)
	if err != nil {
		return nil, err
	}
	td, ok := m.Topics[fovTopic]
	if !ok || td.Err != nil {
		return nil, fmt.Errorf("topic %s: %v", fovTopic, td.Err)
	}
	if len(td.Partitions) != fovPartitions {
		return nil, fmt.Errorf("%d partitions", len(td.Partitions))
	}
	for _, p := range td.Partitions {
		if p.Err != nil {
			return nil, fmt.Errorf("partition %d: %w", p.Partition, p.Err)
		}
		if check != nil {
			if err := check(p); err != nil {
				return nil, err
			}
		}
	}
	return td.Partitions, nil
}

// fovCheckAcked reads fovTopic from the start to its end offsets and checks that every
// acknowledged record is at its acknowledged offset. It returns each record's leader
// epoch as stored.
func (c *procCluster) fovCheckAcked(t *testing.T, res *fovResult) map[fovAt]int32 {
	t.Helper()
	cl, err := c.procClient()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, fovTopic)
	cl.Close()
	if err != nil {
		t.Fatal(err)
	}
	end := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { end[o.Partition] = o.Offset })
	offsets := map[string]map[int32]kgo.Offset{fovTopic: {}}
	for p := range int32(fovPartitions) {
		offsets[fovTopic][p] = kgo.NewOffset().AtStart()
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.ConsumePartitions(offsets))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	stored := map[fovAt]int{}
	epochs := map[fovAt]int32{}
	next := map[int32]int64{}
	for !maps.EqualFunc(end, next, func(a, b int64) bool { return b >= a }) || len(next) < len(end) {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading the topic back: %v (read up to %v of %v)", ctx.Err(), next, end)
		}
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Logf("fetch %s-%d: %v", topic, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			seq, ok := fovSeq(r.Value)
			if !ok {
				t.Errorf("partition %d offset %d: unexpected value %q", r.Partition, r.Offset, r.Value)
			}
			stored[fovAt{r.Partition, r.Offset}] = seq
			epochs[fovAt{r.Partition, r.Offset}] = r.LeaderEpoch
			next[r.Partition] = r.Offset + 1
		})
		for p, e := range end {
			if e == 0 {
				next[p] = 0
			}
		}
	}
	res.mu.Lock()
	defer res.mu.Unlock()
	present := map[int]bool{}
	for _, seq := range stored {
		present[seq] = true
	}
	lost := 0
	for _, a := range res.acked {
		if a.offset < 0 { // the client reports no offset: the record must be somewhere
			if !present[a.seq] {
				if lost < 10 {
					t.Errorf("acknowledged record %d is not in the topic", a.seq)
				}
				lost++
			}
			continue
		}
		if seq, ok := stored[fovAt{a.partition, a.offset}]; !ok || seq != a.seq {
			if lost < 10 {
				t.Errorf("acknowledged record %d at %d-%d: read back %d (present %v)", a.seq, a.partition, a.offset, seq, ok)
			}
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d acknowledged records lost (want 0)", lost)
	}
	t.Logf("read back %d records up to end offsets %v: every one of %d acknowledged records at its offset", len(stored), end, len(res.acked))
	return epochs
}

// saramaFailoverProducer is sarama's AsyncProducer with its defaults but acks=all and
// Producer.Retry.Max 1000: its default of 3 retries 100 ms apart gives up long before a
// leaderless window of broker.session.timeout.ms ends (docs/compatibility.md), against
// Apache Kafka as here.
func saramaFailoverProducer(t *testing.T, addrs []string, stop <-chan struct{}, res *fovResult) {
	cfg := sarama.NewConfig()
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Retry.Max = 1000
	cfg.Producer.Return.Successes = true
	prod, err := sarama.NewAsyncProducer(addrs, cfg)
	if err != nil {
		t.Error(err)
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for m := range prod.Successes() {
			res.ack(fovAck{seq: m.Metadata.(int), partition: m.Partition, offset: m.Offset, at: time.Now()})
		}
	}()
	go func() {
		defer wg.Done()
		for e := range prod.Errors() {
			res.fail(e.Err)
		}
	}()
	fovPace(stop, func(seq int) {
		prod.Input() <- &sarama.ProducerMessage{Topic: fovTopic, Value: sarama.StringEncoder(fovValue(seq)), Metadata: seq}
	})
	prod.AsyncClose() // flushes what is buffered, then closes both channels
	wg.Wait()
}

// kafkaGoFailoverProducer is segmentio/kafka-go's Writer with acks=all (its default is
// acks=0) and MaxAttempts 100: its default of 10 attempts with a 100 ms-1 s backoff gives
// up after about 6 s (docs/compatibility.md). Synchronous writes of 100 messages (one
// fovTick's worth): the Writer does not report offsets, so acknowledgements carry none.
func kafkaGoFailoverProducer(t *testing.T, addrs []string, stop <-chan struct{}, res *fovResult) {
	w := &kafka.Writer{Addr: kafka.TCP(addrs...), Topic: fovTopic, RequiredAcks: kafka.RequireAll, MaxAttempts: 100}
	defer w.Close()
	var batch []kafka.Message
	var seqs []int
	flush := func() {
		if len(batch) == 0 {
			return
		}
		err := w.WriteMessages(context.Background(), batch...)
		var werrs kafka.WriteErrors
		switch {
		case errors.As(err, &werrs):
			for i, e := range werrs {
				if e != nil {
					res.fail(e)
				} else {
					res.ack(fovAck{seq: seqs[i], partition: -1, offset: -1, at: time.Now()})
				}
			}
		case err != nil:
			for range batch {
				res.fail(err)
			}
		default:
			for _, seq := range seqs {
				res.ack(fovAck{seq: seq, partition: -1, offset: -1, at: time.Now()})
			}
		}
		batch, seqs = batch[:0], seqs[:0]
	}
	perTick := int(float64(fovRate) * fovTick.Seconds())
	fovPace(stop, func(seq int) {
		batch = append(batch, kafka.Message{Value: []byte(fovValue(seq))})
		seqs = append(seqs, seq)
		if len(batch) == perTick {
			flush()
		}
	})
	flush()
}

// kcatFailoverProducer is librdkafka through `kcat -P` with its defaults (acks=all,
// unlimited retries, a 300 s message timeout), fed one record per line. With -v -v -v
// kcat reports each delivery on stderr, without the record: progress is counted as
// deliveries arrive, and the records are known acknowledged once kcat has exited with
// no failed delivery.
func kcatFailoverProducer(t *testing.T, addrs []string, stop <-chan struct{}, res *fovResult) {
	path, err := exec.LookPath("kcat")
	if err != nil {
		t.Error("kcat is not installed")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "-P", "-v", "-v", "-v", "-b", strings.Join(addrs, ","), "-t", fovTopic)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Error(err)
		return
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Error(err)
		return
	}
	if err := cmd.Start(); err != nil {
		t.Error(err)
		return
	}
	var other []string // stderr lines that are not delivery reports
	scanned := make(chan int)
	go func() {
		failed := 0
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.Contains(line, "Message delivered"):
				res.progressed()
			case strings.Contains(line, "Delivery failed"):
				failed++
				res.fail(errors.New("kcat: " + strings.TrimSpace(strings.TrimLeft(line, "%"))))
			default:
				if len(other) < 50 {
					other = append(other, line)
				}
			}
		}
		scanned <- failed
	}()
	sent := 0
	fovPace(stop, func(seq int) {
		if _, err := io.WriteString(in, fovValue(seq)+"\n"); err == nil {
			sent = seq + 1
		}
	})
	in.Close()
	failed := <-scanned
	waitErr := cmd.Wait()
	if waitErr != nil || failed > 0 {
		t.Logf("kcat: %v, %d failed deliveries; other stderr lines:\n%s", waitErr, failed, strings.Join(other, "\n"))
	}
	if waitErr == nil && failed == 0 {
		now := time.Now()
		for seq := range sent {
			res.ack(fovAck{seq: seq, partition: -1, offset: -1, at: now})
		}
	} else if failed == 0 {
		t.Errorf("kcat: %v", waitErr)
	}
}
