package integration

// Consumer-group measurements (benchmarks, never timed tests), on three in-process
// nodes with __consumer_offsets at replication factor 3:
//
//	go test ./integration/ -run XXX -bench 'BenchmarkGroups' -benchtime 1x -v
//
// BenchmarkGroups_CommitsVsProduce: offset commits per second from 100 consumers
// committing in a loop (each a simple consumer of its own group: one OffsetCommit at a
// time, answered once replicated), beside acks=all produce of the same number of
// 100-byte records from 100 producers sending one record at a time, in the same run.
//
// BenchmarkGroups_FailoverTimes: the median of 5 of the time from a member's kill (its
// connections cut, no LeaveGroup) to the survivor consuming the dead member's
// partitions, and of the time from the group coordinator's kill -9 to the group being
// Stable again on another broker.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// benchCluster starts three nodes with the group test properties.
func benchCluster(b *testing.B) *Cluster {
	b.Helper()
	return StartCluster(b, 3, groupOptions()...)
}

func BenchmarkGroups_CommitsVsProduce(b *testing.B) {
	const (
		workers = 100
		perEach = 100 // commits, and records, per worker
	)
	c := benchCluster(b)
	const topic = "bench-commits"
	c.CreateTopicRF(b, topic, 6, 3, map[string]*string{"min.insync.replicas": kmsg.StringPtr("2")})
	clients := make([]*kgo.Client, 10)
	for i := range clients {
		clients[i] = c.Client(b, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()), byNameGroupVersions())
	}
	ctx := testContext(b)
	// Create __consumer_offsets and load every partition a worker's group uses.
	for w := range workers {
		commitOnce(b, ctx, clients[w%len(clients)], benchGroup(w), topic, 0)
	}

	for b.Loop() {
		var failed atomic.Int64
		start := time.Now()
		run(workers, func(w int) {
			cl := clients[w%len(clients)]
			for i := range perEach {
				if err := commitErr(ctx, cl, benchGroup(w), topic, int64(i+1)); err != nil {
					failed.Add(1)
				}
			}
		})
		commitTime := time.Since(start)

		value := make([]byte, 100)
		start = time.Now()
		run(workers, func(w int) {
			cl := clients[w%len(clients)]
			for range perEach {
				if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
					failed.Add(1)
				}
			}
		})
		produceTime := time.Since(start)
		if n := failed.Load(); n > 0 {
			b.Fatalf("%d commits or produces failed", n)
		}
		total := float64(workers * perEach)
		b.ReportMetric(total/commitTime.Seconds(), "commits/s")
		b.ReportMetric(total/produceTime.Seconds(), "records/s")
		b.ReportMetric(produceTime.Seconds()/commitTime.Seconds(), "commit÷produce")
	}
}

// benchGroup is worker w's group.
func benchGroup(w int) string { return fmt.Sprintf("bench-group-%03d", w) }

// run calls f(0..n-1) in n goroutines and waits for them.
func run(n int, f func(int)) {
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(w)
		}()
	}
	wg.Wait()
}

// commitErr commits offset for partition 0 of topic as group's simple consumer
// (generation -1) and returns the request's or the partition's error.
func commitErr(ctx context.Context, cl *kgo.Client, group, topic string, offset int64) error {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = group
	req.Generation = -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition = 0
	rp.Offset = offset
	rp.LeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return fmt.Errorf("%s %s-%d: error code %d", group, t.Topic, p.Partition, p.ErrorCode)
			}
		}
	}
	return nil
}

// commitOnce is commitErr retried until it succeeds (the coordinator may be loading).
func commitOnce(b *testing.B, ctx context.Context, cl *kgo.Client, group, topic string, offset int64) {
	b.Helper()
	testwait.For(b, groupWait, func() error { return commitErr(ctx, cl, group, topic, offset) })
}

func BenchmarkGroups_FailoverTimes(b *testing.B) {
	const rounds = 5
	c := benchCluster(b)
	const topic = "bench-failover"
	c.CreateTopicRF(b, topic, 4, 3, nil)
	for b.Loop() {
		var memberKill, coordinatorKill []time.Duration
		for round := range rounds {
			memberKill = append(memberKill, measureMemberKill(b, c, topic, fmt.Sprintf("bench-kill-%d", round)))
			coordinatorKill = append(coordinatorKill, measureCoordinatorKill(b, c, topic, fmt.Sprintf("bench-coord-%d", round)))
		}
		b.Logf("member kill → survivor consuming: %v", memberKill)
		b.Logf("coordinator kill → Stable again: %v", coordinatorKill)
		b.ReportMetric(float64(median(memberKill).Milliseconds()), "ms-member-kill")
		b.ReportMetric(float64(median(coordinatorKill).Milliseconds()), "ms-coordinator-kill")
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// measureMemberKill forms a two-member group on topic, kills one member while a
// producer writes to every partition, and returns the time until the survivor receives
// a record, produced after the kill, from a partition the dead member had.
func measureMemberKill(b *testing.B, c *Cluster, topic, group string) time.Duration {
	b.Helper()
	start := startKgoMember()
	survivor := start(b, c, group, topic, group+"-survivor")
	victim := start(b, c, group, topic, group+"-victim")
	defer survivor.leave()
	split := waitSplit(b, c, group, topic, 4, survivor.clientID, victim.clientID)
	orphaned := split[victim.clientID]

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	var killedAt atomic.Int64 // UnixNano; 0 before the kill
	prod := c.Client(b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	wg.Add(1)
	go func() {
		defer wg.Done()
		pace := time.NewTicker(10 * time.Millisecond) // the producer's rate
		defer pace.Stop()
		for i := 0; ctx.Err() == nil; i++ {
			phase := "before"
			if killedAt.Load() != 0 {
				phase = "after"
			}
			for p := range int32(4) {
				prod.Produce(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("%s/%d/%d", phase, p, i))}, nil)
			}
			select {
			case <-ctx.Done():
			case <-pace.C:
			}
		}
	}()
	killed := time.Now()
	killedAt.Store(killed.UnixNano())
	victim.kill()
	var took time.Duration
	testwait.For(b, groupWait, func() error {
		for _, r := range survivor.records() {
			if slices.Contains(orphaned, r.partition) && len(r.value) > 6 && r.value[:6] == "after/" {
				took = time.Since(killed)
				return nil
			}
		}
		return fmt.Errorf("the survivor has not consumed partitions %v yet", orphaned)
	})
	return took
}

// measureCoordinatorKill forms a two-member group, kills -9 its coordinator, and
// returns the time until the group is Stable with both members on another broker; the
// killed node is restarted afterwards.
func measureCoordinatorKill(b *testing.B, c *Cluster, topic, group string) time.Duration {
	b.Helper()
	start := startKgoMember()
	m1 := start(b, c, group, topic, group+"-1")
	m2 := start(b, c, group, topic, group+"-2")
	defer m1.leave()
	defer m2.leave()
	waitSplit(b, c, group, topic, 4, m1.clientID, m2.clientID)
	adm := c.Admin(b)
	coordinator := func() (int32, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r := adm.FindGroupCoordinators(ctx, group)[group]
		return r.NodeID, r.Err
	}
	old, err := coordinator()
	if err != nil {
		b.Fatal(err)
	}
	killed := time.Now()
	c.Kill(int(old))
	var took time.Duration
	testwait.For(b, 2*groupWait, func() error {
		// A fresh client each time: kgo keeps dialing a cached coordinator that is
		// gone.
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
		if err != nil {
			return err
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ds, err := kadm.NewClient(cl).DescribeGroups(ctx, group)
		if err != nil {
			return err
		}
		d := ds[group]
		if d.Err != nil || d.State != "Stable" || len(d.Members) != 2 || d.Coordinator.NodeID == old {
			return fmt.Errorf("group %s on %d: %s with %d members (%v)", group, d.Coordinator.NodeID, d.State, len(d.Members), d.Err)
		}
		took = time.Since(killed)
		return nil
	})
	c.Restart(int(old))
	return took
}
