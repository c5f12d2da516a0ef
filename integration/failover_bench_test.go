package integration

// Failover measurements (issue P17 items 4-6) with real `petrel server` processes and
// Kafka's session defaults (broker.session.timeout.ms 9000, heartbeat 2000), reported
// as medians over the rounds; figures and commands are in docs/replication.md
// ("Failover as clients see it"). Run, one at a time on a quiet machine:
//
//	go test -run '^$' -bench 'BenchmarkFailover' -benchtime 5x -timeout 30m ./integration/
//
// Nothing here asserts a speed: a round fails only when something does not happen at
// all within generous bounds.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// benchKafkaSessions are Kafka's broker.session.timeout.ms and
// broker.heartbeat.interval.ms, overriding the process harness's short ones.
var benchKafkaSessions = []string{"broker.session.timeout.ms=9000", "broker.heartbeat.interval.ms=2000"}

// benchRoundBound bounds every wait of a round.
const benchRoundBound = 60 * time.Second

// benchSettle is how long a round waits before its fault, so that a long-lived kgo
// client's last metadata refresh is older than its MetadataMinAge (5 s), as it is for a
// client that has been producing for a while when a broker dies.
const benchSettle = 6 * time.Second

// benchWait polls f every 5 ms until it returns nil and returns when it did; it fails
// b after benchRoundBound.
func benchWait(b testing.TB, what string, f func() error) time.Time {
	b.Helper()
	deadline := time.Now().Add(benchRoundBound)
	for {
		err := f()
		if err == nil {
			return time.Now()
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: not within %s: %v", what, benchRoundBound, err)
		}
		time.Sleep(5 * time.Millisecond) // polling another process: nothing to wait on
	}
}

// benchListening returns when addr accepts a TCP connection.
func benchListening(b testing.TB, addr string) time.Time {
	return benchWait(b, "listening on "+addr, func() error {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err
	})
}

// benchMedians reports the median of each named series in ms, and logs every value.
func benchMedians(b *testing.B, series map[string][]time.Duration) {
	names := make([]string, 0, len(series))
	for name := range series {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		ds := series[name]
		if len(ds) == 0 {
			continue
		}
		rounded := make([]string, len(ds))
		for i, d := range ds {
			rounded[i] = d.Round(time.Millisecond).String()
		}
		b.Logf("%s: %v (median %s, worst %s)", name, rounded, median(ds).Round(time.Millisecond), slices.Max(ds).Round(time.Millisecond))
		b.ReportMetric(float64(median(ds).Milliseconds()), name+"-ms")
	}
}

// benchProduceAndFetch produces one record to topic/partition through a fresh default
// kgo client seeded with seeds and fetches it back; it returns when each completed.
func benchProduceAndFetch(b testing.TB, seeds []string, topic string, partition int32) (acked, fetched time.Time) {
	b.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), benchRoundBound)
	defer cancel()
	value := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: partition, Value: []byte(value)}).First()
	if err != nil {
		b.Fatalf("produce to %s/%d: %v", topic, partition, err)
	}
	acked = time.Now()
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(r.Offset)}}))
	if err != nil {
		b.Fatal(err)
	}
	defer cons.Close()
	for {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			b.Fatalf("fetch %s/%d at %d: %v", topic, partition, r.Offset, ctx.Err())
		}
		found := false
		fs.EachRecord(func(rec *kgo.Record) { found = found || string(rec.Value) == value })
		if found {
			return acked, time.Now()
		}
	}
}

// benchProduceAndFetchAll produces one record to each of topic's partitions through
// one fresh default kgo client seeded with seeds, fetches them all back through
// another, and returns when the last was fetched.
func benchProduceAndFetchAll(b testing.TB, seeds []string, topic string, partitions int32) time.Time {
	b.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), benchRoundBound)
	defer cancel()
	value := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	var records []*kgo.Record
	for p := range partitions {
		records = append(records, &kgo.Record{Topic: topic, Partition: p, Value: []byte(value)})
	}
	if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
		b.Fatalf("produce to %s: %v", topic, err)
	}
	offsets := map[int32]kgo.Offset{}
	for _, r := range records {
		offsets[r.Partition] = kgo.NewOffset().At(r.Offset)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	if err != nil {
		b.Fatal(err)
	}
	defer cons.Close()
	seen := map[int32]bool{}
	for len(seen) < int(partitions) {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			b.Fatalf("fetch %s: %v (have %v)", topic, ctx.Err(), seen)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) == value {
				seen[r.Partition] = true
			}
		})
	}
	return time.Now()
}

// BenchmarkFailover_RestartSingleNode: kill -9 of a one-node cluster's process, restart
// on the same data directory; from the port listening to the first acknowledged
// produce and the first fetch of it (fresh default kgo clients).
func BenchmarkFailover_RestartSingleNode(b *testing.B) {
	bin := procBuildPetrel(b)
	ports, err := procFreePorts(2)
	if err != nil {
		b.Fatal(err)
	}
	raftAddr := fmt.Sprintf("127.0.0.1:%d", ports[1])
	n := &procNode{id: 0, bin: bin, dir: b.TempDir(), kafkaAddr: fmt.Sprintf("127.0.0.1:%d", ports[0]), raftAddr: raftAddr,
		voters: "0@" + raftAddr, sets: benchKafkaSessions}
	n.start(b)
	const topic = "restart"
	benchCreateTopic(b, []string{n.kafkaAddr}, topic, 1, 1)
	benchProduceAndFetch(b, []string{n.kafkaAddr}, topic, 0)
	series := map[string][]time.Duration{}
	for b.Loop() {
		killed := time.Now()
		n.kill()
		n.start(b)
		listening := benchListening(b, n.kafkaAddr)
		acked, fetched := benchProduceAndFetch(b, []string{n.kafkaAddr}, topic, 0)
		series["kill-to-listening"] = append(series["kill-to-listening"], listening.Sub(killed))
		series["listening-to-first-ack"] = append(series["listening-to-first-ack"], acked.Sub(listening))
		series["listening-to-first-fetch"] = append(series["listening-to-first-fetch"], fetched.Sub(listening))
	}
	benchMedians(b, series)
}

// benchCreateTopic creates topic through a fresh kgo client seeded with seeds,
// retrying retriable errors, and returns when it was created.
func benchCreateTopic(b testing.TB, seeds []string, topic string, partitions int32, rf int16, configs ...string) time.Time {
	b.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	cfgs := map[string]*string{}
	for i := 0; i+1 < len(configs); i += 2 {
		cfgs[configs[i]] = &configs[i+1]
	}
	adm := kadm.NewClient(cl)
	return benchWait(b, "create "+topic, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := adm.CreateTopic(ctx, partitions, rf, cfgs, topic)
		if err == nil {
			err = resp.Err
		}
		if errors.Is(err, kerr.TopicAlreadyExists) {
			return nil // an earlier attempt's answer was lost
		}
		return err
	})
}

// benchMetadata returns the cluster's metadata for topics as the given seeds answer.
func benchMetadata(seeds []string, topics ...string) (kadm.Metadata, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DialTimeout(time.Second))
	if err != nil {
		return kadm.Metadata{}, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return kadm.NewClient(cl).Metadata(ctx, topics...)
}

// seedsWithout returns the cluster's Kafka addresses but node id's.
func (c *procCluster) seedsWithout(id int32) []string {
	var out []string
	for _, n := range c.nodes {
		if n.id != id {
			out = append(out, n.kafkaAddr)
		}
	}
	return out
}

// benchHealthy waits until the three brokers are registered and unfenced, and every
// partition of topic (if any) has all three replicas in its ISR.
func (c *procCluster) benchHealthy(b testing.TB, topic string) {
	b.Helper()
	benchWait(b, "a healthy cluster", func() error {
		var topics []string
		if topic != "" {
			topics = append(topics, topic)
		}
		m, err := benchMetadata(c.addrs(), topics...)
		if err != nil {
			return err
		}
		if len(m.Brokers) != 3 {
			return fmt.Errorf("brokers %v", m.Brokers.NodeIDs())
		}
		if topic == "" {
			return nil
		}
		td, ok := m.Topics[topic]
		if !ok || td.Err != nil || len(td.Partitions) == 0 {
			return fmt.Errorf("topic %s not in the answer yet (%v)", topic, td.Err)
		}
		for _, p := range td.Partitions {
			if len(p.ISR) != 3 || p.Leader < 0 {
				return fmt.Errorf("partition %d: leader %d ISR %v", p.Partition, p.Leader, p.ISR)
			}
		}
		return nil
	})
}

// BenchmarkFailover_Restart3Nodes: kill -9 of a broker (not the controller) of a
// 3-node cluster holding an RF 3 topic under a light acks=all load, restart on the same
// data directory: from the port listening to the broker answering clients (ready), the
// first produce and fetch through it, and from ready to it being back in the ISR of
// every partition.
func BenchmarkFailover_Restart3Nodes(b *testing.B) {
	bin := procBuildPetrel(b)
	c := procStartClusterWith(b, bin, benchKafkaSessions...)
	const topic = "restart3"
	benchCreateTopic(b, c.addrs(), topic, 6, 3, "min.insync.replicas", "2")
	c.benchHealthy(b, topic)
	stop := benchBackgroundProducer(b, c.addrs(), topic)
	defer stop()
	series := map[string][]time.Duration{}
	round := 0
	for b.Loop() {
		m, err := benchMetadata(c.addrs())
		if err != nil {
			b.Fatal(err)
		}
		victim := c.nodes[(int(m.Controller)+1+round%2)%3]
		round++
		victim.kill()
		victim.start(b)
		listening := benchListening(b, victim.kafkaAddr)
		// A client seeded with the restarted node only: its Metadata waits there until
		// the broker is ready (start-up readiness).
		ready := benchWait(b, "the restarted broker answering", func() error {
			_, err := benchMetadata([]string{victim.kafkaAddr}, topic)
			return err
		})
		acked, fetched := benchProduceAndFetch(b, []string{victim.kafkaAddr}, topic, 0)
		inISR := benchWait(b, "the restarted broker back in every ISR", func() error {
			m, err := benchMetadata(c.addrs(), topic)
			if err != nil {
				return err
			}
			for _, p := range m.Topics[topic].Partitions {
				if !slices.Contains(p.ISR, victim.id) {
					return fmt.Errorf("partition %d ISR %v", p.Partition, p.ISR)
				}
			}
			return nil
		})
		series["listening-to-ready"] = append(series["listening-to-ready"], ready.Sub(listening))
		series["listening-to-first-ack"] = append(series["listening-to-first-ack"], acked.Sub(listening))
		series["listening-to-first-fetch"] = append(series["listening-to-first-fetch"], fetched.Sub(listening))
		series["ready-to-in-every-isr"] = append(series["ready-to-in-every-isr"], inISR.Sub(ready))
		c.benchHealthy(b, topic)
	}
	benchMedians(b, series)
}

// benchBackgroundProducer produces to every partition of topic every 10 ms (acks=all)
// until the returned stop is called.
func benchBackgroundProducer(b testing.TB, seeds []string, topic string) (stop func()) {
	b.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		b.Fatal(err)
	}
	stopTicks := everyTick(10*time.Millisecond, func(i int) {
		cl.Produce(context.Background(), &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i))}, nil)
	})
	return func() {
		stopTicks()
		cl.Close()
	}
}

// everyTick calls each(0), each(1), ... on a goroutine of its own, one call per
// interval, until the returned stop is called; stop returns once the calls ended.
func everyTick(interval time.Duration, each func(i int)) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			each(i)
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// ackLog records, per partition, the times a long-lived producer's records were
// acknowledged. Safe for concurrent use.
type ackLog struct {
	mu   sync.Mutex
	acks map[int32][]time.Time
}

func (l *ackLog) record(p int32, at time.Time) {
	l.mu.Lock()
	l.acks[p] = append(l.acks[p], at)
	l.mu.Unlock()
}

// firstAfter returns partition p's first acknowledgement after t.
func (l *ackLog) firstAfter(p int32, t time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, at := range l.acks[p] {
		if at.After(t) {
			return at, true
		}
	}
	return time.Time{}, false
}

// BenchmarkFailover_LeaderKill: kill -9 of a broker that leads partitions of an RF 3
// topic (min.insync.replicas=2) while a long-lived default kgo producer writes to every
// partition every 2 ms: from the kill to a new leader of each of its partitions in
// Metadata, and to the producer's first acknowledgement on every one of them. The
// victim is a broker that is not the controller ("broker"), or the controller
// ("controller": an election comes first).
func BenchmarkFailover_LeaderKill(b *testing.B) {
	bin := procBuildPetrel(b)
	b.Run("broker", func(b *testing.B) { benchLeaderKill(b, bin, false) })
	b.Run("controller", func(b *testing.B) { benchLeaderKill(b, bin, true) })
}

func benchLeaderKill(b *testing.B, bin string, controller bool) {
	c := procStartClusterWith(b, bin, benchKafkaSessions...)
	const topic, partitions = "leaderkill", 6
	benchCreateTopic(b, c.addrs(), topic, partitions, 3, "min.insync.replicas", "2")
	c.benchHealthy(b, topic)
	log := &ackLog{acks: map[int32][]time.Time{}}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		b.Fatal(err)
	}
	stopTicks := everyTick(2*time.Millisecond, func(i int) {
		p := int32(i % partitions)
		cl.Produce(context.Background(), &kgo.Record{Topic: topic, Partition: p}, func(r *kgo.Record, err error) {
			if err == nil {
				log.record(r.Partition, time.Now())
			}
		})
	})
	defer func() {
		stopTicks()
		cl.Close()
	}()
	// The client's first metadata refresh after it learns the topic comes one
	// MetadataMinAge later: the settle of the first round starts after it.
	log.steady(b, partitions, time.Now().Add(benchSettle))
	series := map[string][]time.Duration{}
	for b.Loop() {
		time.Sleep(benchSettle) // the producer's metadata ages, as a long-lived one's has
		m, err := benchMetadata(c.addrs(), topic)
		if err != nil {
			b.Fatal(err)
		}
		victim, led := c.benchLeaderVictim(m, topic)
		if controller {
			victim, led = c.nodes[m.Controller], nil
			for _, p := range m.Topics[topic].Partitions.Sorted() {
				if p.Leader == victim.id {
					led = append(led, p.Partition)
				}
			}
		}
		if victim == nil || len(led) == 0 {
			b.Fatalf("no victim (controller %d, controller's wanted %v): %v", m.Controller, controller, m.Topics[topic].Partitions)
		}
		killed := time.Now()
		victim.kill()
		dead := time.Now() // acks after this come from new leaders
		b.Logf("killed node-%d (leading %v) at %s", victim.id, led, killed.Format("15:04:05.000"))
		survivors := c.seedsWithout(victim.id)
		newLeaders := benchWait(b, "new leaders", func() error {
			m, err := benchMetadata(survivors, topic)
			if err != nil {
				return err
			}
			for _, p := range led {
				if l := m.Topics[topic].Partitions[p].Leader; l == victim.id || l < 0 {
					return fmt.Errorf("partition %d: leader %d", p, l)
				}
			}
			return nil
		})
		var firstAcks []time.Duration
		benchWait(b, "an acknowledgement on every partition the victim led", func() error {
			firstAcks = firstAcks[:0]
			for _, p := range led {
				at, ok := log.firstAfter(p, dead)
				if !ok {
					return fmt.Errorf("partition %d: none yet", p)
				}
				firstAcks = append(firstAcks, at.Sub(killed))
			}
			return nil
		})
		series["kill-to-new-leaders"] = append(series["kill-to-new-leaders"], newLeaders.Sub(killed))
		series["kill-to-first-ack-every-partition"] = append(series["kill-to-first-ack-every-partition"], slices.Max(firstAcks))
		victim.start(b)
		c.benchHealthy(b, topic)
		c.benchPreferredLeaders(b, topic)
		// The producer finds the moved leaders (NOT_LEADER_OR_FOLLOWER, a metadata
		// refresh); the next round's settle starts once it writes everywhere again.
		log.steady(b, partitions, time.Now())
	}
	benchMedians(b, series)
}

// steady waits until every partition has an acknowledgement after since.
func (l *ackLog) steady(b testing.TB, partitions int32, since time.Time) {
	b.Helper()
	for time.Now().Before(since) {
		time.Sleep(time.Until(since)) // a settle interval: nothing to wait on
	}
	benchWait(b, "acknowledgements on every partition", func() error {
		for p := range partitions {
			if _, ok := l.firstAfter(p, since); !ok {
				return fmt.Errorf("partition %d: none since %s", p, since.Format("15:04:05.000"))
			}
		}
		return nil
	})
}

// benchLeaderVictim picks a broker other than the controller that leads partitions of
// topic, with the partitions it leads.
func (c *procCluster) benchLeaderVictim(m kadm.Metadata, topic string) (*procNode, []int32) {
	for _, n := range c.nodes {
		if n.id == m.Controller {
			continue
		}
		var led []int32
		for _, p := range m.Topics[topic].Partitions.Sorted() {
			if p.Leader == n.id {
				led = append(led, p.Partition)
			}
		}
		if len(led) > 0 {
			return n, led
		}
	}
	return nil, nil
}

// benchPreferredLeaders moves every partition of topic back to its preferred leader.
func (c *procCluster) benchPreferredLeaders(b testing.TB, topic string) {
	b.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	benchWait(b, "preferred leaders", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, nil); err != nil {
			return err
		}
		m, err := adm.Metadata(ctx, topic)
		if err != nil {
			return err
		}
		for _, p := range m.Topics[topic].Partitions {
			if len(p.Replicas) == 0 || p.Leader != p.Replicas[0] {
				return fmt.Errorf("partition %d: leader %d, replicas %v", p.Partition, p.Leader, p.Replicas)
			}
		}
		return nil
	})
}

// BenchmarkFailover_ControllerKill: kill -9 of the controller of a 3-node cluster; a
// topic (3 partitions, RF 2) is created through the survivors right after the kill, and
// is usable once a record produced to every partition (one client) is acknowledged and
// fetched back (another client). From the kill to usable; no partition of it may be
// placed on the dead broker.
func BenchmarkFailover_ControllerKill(b *testing.B) {
	bin := procBuildPetrel(b)
	c := procStartClusterWith(b, bin, benchKafkaSessions...)
	c.benchHealthy(b, "")
	series := map[string][]time.Duration{}
	round := 0
	for b.Loop() {
		round++
		m, err := benchMetadata(c.addrs())
		if err != nil {
			b.Fatal(err)
		}
		victim := c.nodes[m.Controller]
		survivors := c.seedsWithout(victim.id)
		topic := fmt.Sprintf("ctrlkill-%d", round)
		killed := time.Now()
		victim.kill()
		created := benchCreateTopic(b, survivors, topic, 3, 2)
		usable := benchProduceAndFetchAll(b, survivors, topic, 3)
		mt, err := benchMetadata(survivors, topic)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range mt.Topics[topic].Partitions {
			if slices.Contains(p.Replicas, victim.id) {
				b.Errorf("%s partition %d placed on the dead controller %d: replicas %v", topic, p.Partition, victim.id, p.Replicas)
			}
		}
		series["kill-to-created"] = append(series["kill-to-created"], created.Sub(killed))
		series["kill-to-usable"] = append(series["kill-to-usable"], usable.Sub(killed))
		victim.start(b)
		c.benchHealthy(b, "")
	}
	benchMedians(b, series)
}
