package integration

// A consumer group losing its coordinator (issue P25 item 3), as a user sees it: two
// default kgo members (autocommit every 500 ms) consume a topic while a producer writes
// 60,000 records into it over 20 s (6 partitions, RF 3, min.insync.replicas 2), and the
// group's coordinator is killed (as kill -9), stopped cleanly, or partitioned away from
// brokers and clients: either while both members' first JoinGroups are parked in the
// initial rebalance delay ("joining", the run), or once the group has consumed
// every partition for 6 s ("steady"). The test asserts the behaviour (every partition
// consumed again, nothing lost, no committed offset going back, consumption after the
// fault starting at or after the offsets committed before it); the benchmark reports
// how fast, as medians (never asserted):
//
//	go test ./integration/ -run '^$' -bench 'BenchmarkGroupCoordinatorFailover' -benchtime 5x -timeout 60m -v
//
// Figures and the timeline are in docs/groups.md ("Failover").

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	// cfoPartitions and cfoRecords are the scenario's topic: 10,000 records a partition.
	cfoPartitions = 6
	cfoRecords    = 60000
	// cfoProduceFor is how long the producer takes to write them.
	cfoProduceFor = 20 * time.Second
	// cfoSettle is how long the group consumes before the coordinator fails in the
	// steady phase.
	cfoSettle = 6 * time.Second
	// cfoScenario is the span in which the group should have drained the records.
	cfoScenario = 30 * time.Second
	// cfoBound bounds every wait of a round: nothing is timed against it.
	cfoBound = 90 * time.Second
)

// cfoFault is how the coordinator is lost.
type cfoFault string

const (
	cfoKill      cfoFault = "kill"      // Cluster.Kill: as kill -9
	cfoStop      cfoFault = "stop"      // Cluster.Stop: a clean shutdown
	cfoPartition cfoFault = "partition" // Cluster.Partition: cut from peers and clients
)

// cfoOptions are the brokers' properties: Kafka's defaults for everything the
// scenario depends on (broker session 9 s, heartbeat 2 s, initial rebalance delay 3 s).
func cfoOptions() []Option {
	return []Option{
		WithProperty("broker.session.timeout.ms", "9000"),
		WithProperty("broker.heartbeat.interval.ms", "2000"),
		WithProperty("offsets.topic.num.partitions", "6"),
	}
}

// cfoPhase is when the coordinator fails.
type cfoPhase string

const (
	// cfoSteady: the group consumes, Stable.
	cfoSteady cfoPhase = "steady"
	// cfoJoining: both members' JoinGroups are parked in the initial rebalance delay
	// (the run: the coordinator died just before the first generation).
	cfoJoining cfoPhase = "joining"
)

// cfoConsumed is one record a member polled.
type cfoConsumed struct {
	partition int32
	offset    int64
	index     int       // the producer's sequence number, the record's value
	produced  time.Time // the record's timestamp (kgo sets it when produced)
	at        time.Time // when it was polled
}

// cfoLog collects what the members polled. Safe for concurrent use.
type cfoLog struct {
	mu   sync.Mutex
	recs []cfoConsumed
}

func (l *cfoLog) add(rs []cfoConsumed) {
	l.mu.Lock()
	l.recs = append(l.recs, rs...)
	l.mu.Unlock()
}

func (l *cfoLog) all() []cfoConsumed {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.recs)
}

// cfoProduced is the producer's outcome: which records were acknowledged, and how many
// the client gave up on.
type cfoProduced struct {
	acked    []bool // by the record's index
	failed   int
	firstErr error
}

// cfoResult is one round's outcome.
type cfoResult struct {
	// resumed is, from the fault, when every partition was consumed again (steady
	// phase: a record produced after the fault; joining phase: any record);
	// resumedEach is the same per partition.
	resumed     time.Duration
	resumedEach map[int32]time.Duration
	// inScenario is how many distinct records were consumed within cfoScenario of the
	// members' start; drained is when the last of the 60,000 was, from their start.
	inScenario int
	drained    time.Duration
	// duplicates counts records consumed more than once (at-least-once after a
	// rebalance: those consumed after the last commit).
	duplicates int
}

// cfoRound runs the scenario on c with a fresh topic and group and restores the node
// that failed; t fails if the group does not recover within cfoBound, an acknowledged
// record is never consumed, a committed offset goes back, or a partition is consumed
// after the fault below its offset committed before it.
func cfoRound(t testing.TB, c *Cluster, fault cfoFault, phase cfoPhase, round int) cfoResult {
	t.Helper()
	topic := fmt.Sprintf("cfo-%s-%s-%d", fault, phase, round)
	group := "g-" + topic
	c.CreateTopicRF(t, topic, cfoPartitions, 3, map[string]*string{"min.insync.replicas": kmsg.StringPtr("2")})
	ctx, cancel := context.WithTimeout(context.Background(), 3*cfoBound)
	defer cancel()

	log := &cfoLog{}
	var wg sync.WaitGroup
	members := make([]*kgo.Client, 2)
	for i := range members {
		name := fmt.Sprintf("%s-m%d", group, i)
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.ClientID(name),
			kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.AutoCommitInterval(500*time.Millisecond),
			kgo.WithLogger(kgo.BasicLogger(&cfoLogWriter{t: t, prefix: name + " "}, kgo.LogLevelInfo, nil)))
		if err != nil {
			t.Fatal(err)
		}
		members[i] = cl
	}
	started := time.Now()
	for _, cl := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				fs := cl.PollFetches(ctx)
				now := time.Now()
				var got []cfoConsumed
				fs.EachRecord(func(r *kgo.Record) {
					n, _ := strconv.Atoi(string(r.Value))
					got = append(got, cfoConsumed{r.Partition, r.Offset, n, r.Timestamp, now})
				})
				log.add(got)
			}
		}()
	}
	defer func() {
		cancel()
		wg.Wait()
		for _, cl := range members {
			cl.Close()
		}
	}()

	// The producer: 60,000 records over cfoProduceFor, round-robin over the partitions.
	prod := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceDone := make(chan cfoProduced, 1)
	go func() {
		const tick = 10 * time.Millisecond
		perTick := cfoRecords / int(cfoProduceFor/tick)
		pace := time.NewTicker(tick)
		defer pace.Stop()
		var mu sync.Mutex
		out := cfoProduced{acked: make([]bool, cfoRecords)}
		var pwg sync.WaitGroup
		for i := 0; i < cfoRecords; {
			for range perTick {
				pwg.Add(1)
				prod.Produce(ctx, &kgo.Record{Topic: topic, Partition: int32(i % cfoPartitions), Value: []byte(strconv.Itoa(i))},
					func(r *kgo.Record, err error) {
						defer pwg.Done()
						mu.Lock()
						defer mu.Unlock()
						if err != nil {
							out.failed++
							if out.firstErr == nil {
								out.firstErr = err
							}
							return
						}
						n, _ := strconv.Atoi(string(r.Value))
						out.acked[n] = true
					})
				i++
			}
			select {
			case <-ctx.Done():
			case <-pace.C:
			}
		}
		pwg.Wait()
		produceDone <- out
	}()

	coord := coordinatorOf(t, c, 0, group)
	switch phase {
	case cfoSteady:
		testwait.For(t, cfoBound, func() error {
			seen := map[int32]bool{}
			for _, r := range log.all() {
				seen[r.partition] = true
			}
			if len(seen) < cfoPartitions {
				return fmt.Errorf("%d partitions consumed, %s since the start", len(seen), time.Since(started).Round(time.Millisecond))
			}
			return nil
		})
		// Like a long-lived member's, the members' last metadata refresh (at the
		// start of their session) is older than kgo's MetadataMinAge (5 s) when the
		// coordinator fails: a refresh after the fault is not held back by kgo.
		time.Sleep(cfoSettle)
		// The coordinator may have moved since (a rebalance of __consumer_offsets): ask again.
		coord = coordinatorOf(t, c, (coord+1)%3, group)
	case cfoJoining:
		raw := c.rawTo(t, coord)
		testwait.For(t, cfoBound, func() error {
			g := describeRaw(ctx, raw, group)
			if g.State != "PreparingRebalance" || len(g.Members) != 2 {
				return fmt.Errorf("group %s with %d members", g.State, len(g.Members))
			}
			return nil
		})
	}
	before := cfoCommitted(ctx, t, c, group)
	t.Logf("%s of coordinator node-%d at %s, %s after the members started; committed %v",
		fault, coord, time.Now().Format("15:04:05.000"), time.Since(started).Round(time.Millisecond), before)
	faultAt := time.Now()
	switch fault {
	case cfoKill:
		c.Kill(coord)
	case cfoStop:
		c.Stop(coord)
	case cfoPartition:
		c.Partition(coord)
	}
	t.Logf("%s of node-%d done in %s", fault, coord, time.Since(faultAt).Round(time.Millisecond))

	// Committed offsets never go below what was committed before the fault.
	survivor := (coord + 1) % 3
	watchStop := make(chan struct{})
	watchDone := make(chan error, 1)
	go func() { watchDone <- cfoWatchCommitted(ctx, c, survivor, group, before, watchStop) }()

	res := cfoResult{resumedEach: map[int32]time.Duration{}}
	testwait.For(t, cfoBound, func() error {
		for _, r := range log.all() {
			// After a fault in the steady phase, a record polled may have been fetched
			// before it: only one produced after the fault shows consumption again.
			// In the joining phase nothing was consumed before the fault.
			fresh := r.produced.After(faultAt) || (phase == cfoJoining && r.at.After(faultAt))
			if _, ok := res.resumedEach[r.partition]; !ok && fresh {
				res.resumedEach[r.partition] = r.at.Sub(faultAt)
			}
		}
		if len(res.resumedEach) < cfoPartitions {
			return fmt.Errorf("partitions consumed again: %v", res.resumedEach)
		}
		return nil
	})
	for _, d := range res.resumedEach {
		res.resumed = max(res.resumed, d)
	}
	// Every acknowledged record is consumed. A produce the client gave up on is
	// logged: the producer is not what is measured.
	var produced cfoProduced
	select {
	case produced = <-produceDone:
	case <-time.After(cfoBound):
		t.Fatal("the producer did not finish")
	}
	if produced.failed > 0 {
		t.Logf("%d produces failed, the first with %v", produced.failed, produced.firstErr)
	}
	testwait.For(t, cfoBound, func() error {
		seen := map[int]bool{}
		for _, r := range log.all() {
			seen[r.index] = true
		}
		missing := 0
		for n, ok := range produced.acked {
			if ok && !seen[n] {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d acknowledged records not consumed (%d consumed)", missing, len(seen))
		}
		return nil
	})
	close(watchStop)
	if err := <-watchDone; err != nil {
		t.Fatal(err)
	}

	recs := log.all()
	first := map[int]time.Time{} // each record's first poll
	for _, r := range recs {
		if at, ok := first[r.index]; !ok || r.at.Before(at) {
			first[r.index] = r.at
		}
		// Consumption after the fault starts at or after the offsets committed before
		// it, never from the start of the partition again.
		if r.at.After(faultAt) && r.offset < before[r.partition] {
			t.Errorf("partition %d: offset %d consumed after the fault, below the %d committed before it", r.partition, r.offset, before[r.partition])
		}
	}
	res.duplicates = len(recs) - len(first)
	for _, at := range first {
		d := at.Sub(started)
		res.drained = max(res.drained, d)
		if d <= cfoScenario {
			res.inScenario++
		}
	}
	t.Logf("%s/%s round %d: every partition consumed again %s after the fault (%v); %d of %d records within %s, all by %s; %d consumed twice",
		fault, phase, round, res.resumed.Round(time.Millisecond), cfoRounded(res.resumedEach), res.inScenario, cfoRecords, cfoScenario,
		res.drained.Round(time.Millisecond), res.duplicates)

	// Restore the cluster for the next round.
	switch fault {
	case cfoKill, cfoStop:
		c.Restart(coord)
	case cfoPartition:
		c.Heal()
		c.WaitReady()
	}
	return res
}

func cfoRounded(m map[int32]time.Duration) map[int32]string {
	out := map[int32]string{}
	for p, d := range m {
		out[p] = d.Round(time.Millisecond).String()
	}
	return out
}

// cfoCommitted returns group's committed offsets, asked through a fresh client (a kgo
// client keeps a coordinator it found).
func cfoCommitted(ctx context.Context, t testing.TB, c *Cluster, group string) map[int32]int64 {
	t.Helper()
	var out map[int32]int64
	testwait.For(t, cfoBound, func() error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
		if err != nil {
			return err
		}
		defer cl.Close()
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		out, err = committedOffsets(qctx, cl, group)
		return err
	})
	return out
}

// cfoWatchCommitted polls group's committed offsets through node via until stop, and
// returns an error if one went below before or below an earlier answer.
func cfoWatchCommitted(ctx context.Context, c *Cluster, via int, group string, before map[int32]int64, stop <-chan struct{}) error {
	last := maps.Clone(before)
	for {
		select {
		case <-stop:
			return nil
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr(via)))
		if err != nil {
			return err
		}
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		got, err := committedOffsets(qctx, cl, group)
		cancel()
		cl.Close()
		if err != nil {
			continue // the coordinator is moving
		}
		for p, o := range got {
			if o < last[p] {
				return fmt.Errorf("partition %d: committed offset went from %d back to %d", p, last[p], o)
			}
			last[p] = o
		}
	}
}

// cfoLogWriter sends a member's kgo log lines to t.Log with the time.
type cfoLogWriter struct {
	t      testing.TB
	prefix string
}

func (w *cfoLogWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s %s%s", time.Now().Format("15:04:05.000"), w.prefix, p)
	return len(p), nil
}

// TestGroupCoordinatorFailover: after its coordinator is killed (as kill -9) while the
// first JoinGroups are parked and while the group consumes, and after it is partitioned
// away, a group of two default kgo members consumes every partition again, consumes
// every acknowledged record, never sees a committed offset go back, and resumes at or
// after the offsets committed before the fault.
func TestGroupCoordinatorFailover(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, cfoOptions()...)
	cfoRound(t, c, cfoKill, cfoJoining, 0)
	cfoRound(t, c, cfoKill, cfoSteady, 1)
	cfoRound(t, c, cfoPartition, cfoSteady, 2)
}

// BenchmarkGroupCoordinatorFailover reports, as medians over the rounds, the time from
// the coordinator's loss to every partition consumed again (resume-ms), how many of
// the 60,000 records the group consumed within the scenario's 30 s, and when it had
// consumed them all (drained-ms, from the members' start).
func BenchmarkGroupCoordinatorFailover(b *testing.B) {
	for _, fault := range []cfoFault{cfoKill, cfoStop, cfoPartition} {
		for _, phase := range []cfoPhase{cfoJoining, cfoSteady} {
			b.Run(string(fault)+"/"+string(phase), func(b *testing.B) {
				c := StartCluster(b, 3, cfoOptions()...)
				series := map[string][]time.Duration{}
				var inScenario []float64
				round := 0
				for b.Loop() {
					res := cfoRound(b, c, fault, phase, round)
					round++
					series["resume"] = append(series["resume"], res.resumed)
					series["drained"] = append(series["drained"], res.drained)
					inScenario = append(inScenario, float64(res.inScenario))
				}
				benchMedians(b, series)
				slices.Sort(inScenario)
				b.Logf("records consumed within %s: %v", cfoScenario, inScenario)
				b.ReportMetric(inScenario[len(inScenario)/2], "records-in-30s")
			})
		}
	}
}
