package integration

// Partition reassignment (P8 item 4): AlterPartitionReassignments and
// ListPartitionReassignments through kadm, the OAR+RAR procedure while an acks=all
// producer runs, controller failover in the middle, cancellation, and the KIP-73
// replication throttle.

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ackedProducer produces records with acks=all (kgo's default, idempotent) until
// stopped, and remembers which were acknowledged.
type ackedProducer struct {
	mu     sync.Mutex
	acked  map[string]bool
	errs   []error
	stop   chan struct{}
	done   chan struct{}
	closed bool
}

func startAckedProducer(t *testing.T, c *Cluster, topic string, valueSize int) *ackedProducer {
	t.Helper()
	cl := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordDeliveryTimeout(60*time.Second))
	p := &ackedProducer{acked: map[string]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	pad := bytes.Repeat([]byte("x"), valueSize)
	go func() {
		defer close(p.done)
		for i := 0; i < 100000; i++ {
			select {
			case <-p.stop:
				return
			default:
			}
			v := fmt.Sprintf("v-%06d-", i)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			err := cl.ProduceSync(ctx, &kgo.Record{Value: append([]byte(v), pad...)}).FirstErr()
			cancel()
			p.mu.Lock()
			if err == nil {
				p.acked[v] = true
			} else {
				p.errs = append(p.errs, err)
			}
			p.mu.Unlock()
		}
	}()
	t.Cleanup(p.close)
	return p
}

func (p *ackedProducer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acked)
}

func (p *ackedProducer) close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.stop)
	}
	p.mu.Unlock()
	<-p.done
}

// waitAcked waits until at least n records are acknowledged.
func (p *ackedProducer) waitAcked(t *testing.T, n int) {
	t.Helper()
	testwait.For(t, 60*time.Second, func() error {
		if got := p.count(); got < n {
			return fmt.Errorf("%d records acknowledged, waiting for %d", got, n)
		}
		return nil
	})
}

// checkNoAckedLoss reads topic's partition 0 from the start to the high watermark and
// checks that every acknowledged record is there.
func (p *ackedProducer) checkNoAckedLoss(t *testing.T, c *Cluster, topic string) {
	t.Helper()
	p.close()
	seen := map[string]bool{}
	cons := c.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	testwait.For(t, 60*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		fs := cons.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Value) >= 9 {
				seen[string(r.Value[:9])] = true
			}
		})
		p.mu.Lock()
		defer p.mu.Unlock()
		missing := 0
		for v := range p.acked {
			if !seen[v] {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d of %d acknowledged records not read yet", missing, len(p.acked))
		}
		return nil
	})
	t.Logf("%d records acknowledged, all read back; %d produce errors seen by the client: %v", len(p.acked), len(p.errs), firstErrs(p.errs, 3))
}

func firstErrs(errs []error, n int) []error { return errs[:min(len(errs), n)] }

// reassign sends one partition's target (nil cancels) and returns its error.
func reassign(t *testing.T, adm *kadm.Client, topic string, target []int32) error {
	t.Helper()
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, 0, target)
	resps, err := adm.AlterPartitionAssignments(testContext(t), req)
	if err != nil {
		return err
	}
	return resps.Error()
}

// waitReplicas waits until every live node's image has topic's partition 0 on exactly
// replicas with no reassignment running.
func waitReplicas(t *testing.T, c *Cluster, topic string, replicas []int32, timeout time.Duration) partitionView {
	t.Helper()
	var p partitionView
	testwait.For(t, timeout, func() error {
		im := c.WaitConverged()
		p = im.Topics[topic].Partitions[0]
		if !slices.Equal(slices.Sorted(slices.Values(p.Replicas)), slices.Sorted(slices.Values(replicas))) || len(p.Adding)+len(p.Removing) > 0 {
			return fmt.Errorf("partition %+v, want replicas %v", p, replicas)
		}
		return nil
	})
	return p
}

// waitIdenticalReplicas waits until the replicas on nodes hold byte-identical logs up to
// one high watermark.
func waitIdenticalReplicas(t *testing.T, c *Cluster, topic string, nodes []int) {
	t.Helper()
	testwait.For(t, 30*time.Second, func() error {
		var first []byte
		var hw0 int64
		for k, i := range nodes {
			hw, data, err := replicaLog(t, c, i, topic, 0)
			if err != nil {
				return err
			}
			if k == 0 {
				first, hw0 = data, hw
			} else if hw != hw0 || !bytes.Equal(data, first) {
				return fmt.Errorf("node-%d: %d bytes up to HW %d, node-%d: %d bytes up to %d", i, len(data), hw, nodes[0], len(first), hw0)
			}
		}
		return nil
	})
}

// TestReassignment_MoveWhileProducing moves an RF 3 partition from {0,1,2} to
// {1,2,3} on 4 nodes while an acks=all producer runs, killing the controller in the
// middle (the adding replica is down, so the move cannot finish before): the new
// controller completes it from the image. No acknowledged record is lost, the final
// replicas are byte-identical, and broker 0's directory is gone.
func TestReassignment_MoveWhileProducing(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 4, WithVoters(3))
	createAssignedTopic(t, c, "move", []int32{0, 1, 2}, nil)
	waitAssignedReplicas(t, c, "move", 0, 1)
	prod := startAckedProducer(t, c, "move", 100)
	prod.waitAcked(t, 200)

	c.Kill(3) // the adding replica cannot catch up until it is back
	adm := c.Admin(t)
	if err := reassign(t, adm, "move", []int32{1, 2, 3}); err != nil {
		t.Fatalf("alter partition reassignments: %v", err)
	}
	list, err := adm.ListPartitionReassignments(testContext(t), kadm.TopicsSet{"move": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	got := list["move"][0]
	if !slices.Equal(got.AddingReplicas, []int32{3}) || !slices.Equal(got.RemovingReplicas, []int32{0}) || !slices.Equal(got.Replicas, []int32{1, 2, 3, 0}) {
		t.Fatalf("listed reassignment %+v", got)
	}

	ctrl := c.Controller()
	start := time.Now()
	c.Kill(ctrl)
	next, _ := c.waitNewController(t, ctrl, start)
	t.Logf("killed controller node-%d mid-reassignment; node-%d took over", ctrl, next)
	prod.waitAcked(t, prod.count()+100)
	c.Restart(3)
	waitReplicas(t, c, "move", []int32{1, 2, 3}, 60*time.Second)
	c.Restart(ctrl)
	prod.waitAcked(t, prod.count()+100)
	prod.checkNoAckedLoss(t, c, "move")

	list, err = adm.ListPartitionReassignments(testContext(t), kadm.TopicsSet{"move": {0: {}}})
	if err != nil || len(list["move"]) != 0 {
		t.Fatalf("after completion, listed: %+v %v", list, err)
	}
	waitIdenticalReplicas(t, c, "move", []int{1, 2, 3})
	dir := filepath.Join(c.nodes[0].dir, "logs", "move-0")
	testwait.For(t, 30*time.Second, func() error {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("broker 0 still has %s (%v)", dir, err)
		}
		return nil
	})
}

// TestReassignment_Cancel starts a move that cannot finish (the leader throttles the
// new replica to 1 byte/s), cancels it midway, and finds the partition back on its old
// replicas, the new replica's directory removed; cancelling again is
// NO_REASSIGNMENT_IN_PROGRESS, and bad targets are INVALID_REPLICA_ASSIGNMENT or
// UNKNOWN_TOPIC_OR_PARTITION.
func TestReassignment_Cancel(t *testing.T) {
	t.Parallel()
	// The move must still be running when it is cancelled. At 1 byte/s the leader's
	// quota allows one fetch and then nothing for hours; that one fetch returns at most
	// replica.fetch.max.bytes (1 MiB), so 3 MiB of incompressible records written first
	// keep the new replica below the high watermark whatever the producer below does.
	// (With only the producer's small records, one fetch could reach the high watermark
	// in a pause between two sends and the move finished before the cancel.)
	c := StartCluster(t, 4, WithVoters(3), WithProperty("leader.replication.throttled.rate", "1"))
	createAssignedTopic(t, c, "cancel", []int32{0, 1, 2}, map[string]string{"leader.replication.throttled.replicas": "*"})
	waitAssignedReplicas(t, c, "cancel", 0, 1)
	bulk := c.Client(t, kgo.DefaultProduceTopic("cancel"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	value := make([]byte, 64<<10)
	for i := range 48 {
		rand.Read(value)
		if err := bulk.ProduceSync(testContext(t), &kgo.Record{Value: value}).FirstErr(); err != nil {
			t.Fatalf("bulk record %d: %v", i, err)
		}
	}
	prod := startAckedProducer(t, c, "cancel", 1000)
	prod.waitAcked(t, 50)
	adm := c.Admin(t)
	if err := reassign(t, adm, "cancel", []int32{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	dir3 := filepath.Join(c.nodes[3].dir, "logs", "cancel-0")
	testwait.For(t, 30*time.Second, func() error {
		if leo, err := replicaLEO(t, c, 3, "cancel", 0); err != nil || leo == 0 {
			return fmt.Errorf("replica 3 has not fetched yet: %d %v", leo, err)
		}
		return nil
	})
	if p := c.WaitConverged().Topics["cancel"].Partitions[0]; !slices.Equal(p.Adding, []int32{3}) {
		t.Fatalf("the throttled move finished or never started: %+v", p)
	}
	if err := reassign(t, adm, "cancel", nil); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	p := waitReplicas(t, c, "cancel", []int32{0, 1, 2}, 30*time.Second)
	if slices.Contains(p.ISR, 3) {
		t.Fatalf("after cancel: %+v", p)
	}
	testwait.For(t, 30*time.Second, func() error {
		if _, err := os.Stat(dir3); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("broker 3 still has %s (%v)", dir3, err)
		}
		return nil
	})
	prod.checkNoAckedLoss(t, c, "cancel")
	if err := reassign(t, adm, "cancel", nil); !errors.Is(err, kerr.NoReassignmentInProgress) {
		t.Fatalf("second cancel: %v, want NO_REASSIGNMENT_IN_PROGRESS", err)
	}
	for _, target := range [][]int32{{1, 1, 2}, {1, 2, 9}} {
		if err := reassign(t, adm, "cancel", target); !errors.Is(err, kerr.InvalidReplicaAssignment) {
			t.Fatalf("target %v: %v, want INVALID_REPLICA_ASSIGNMENT", target, err)
		}
	}
	if err := reassign(t, adm, "no-such-topic", []int32{1}); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("unknown topic: %v", err)
	}
}

// TestReassignment_Throttle adds a replica to a partition holding 4 MiB with a
// 1 MiB/s replication throttle, on the leader's side (leader.replication.throttled.*)
// and on the follower's (follower.replication.throttled.*): the new replica's catch-up
// cannot beat the rate (a burst of up to one second of rate plus one fetch allowed), and
// the move completes. The observed rate is logged.
func TestReassignment_Throttle(t *testing.T) {
	for _, side := range []string{"leader", "follower"} {
		t.Run(side, func(t *testing.T) { testThrottledMove(t, side) })
	}
}

func testThrottledMove(t *testing.T, side string) {
	const rate = 1 << 20
	c := StartCluster(t, 4, WithVoters(3), WithProperty(side+".replication.throttled.rate", fmt.Sprint(rate)))
	createAssignedTopic(t, c, "slow", []int32{0, 1, 2}, map[string]string{side + ".replication.throttled.replicas": "*"})
	waitAssignedReplicas(t, c, "slow", 0, 1)
	cl := c.Client(t, kgo.DefaultProduceTopic("slow"), kgo.ProducerBatchMaxBytes(1<<20))
	const records = 64 // 4 MiB, incompressible
	value := make([]byte, 64<<10)
	for i := range records {
		rand.Read(value)
		if err := cl.ProduceSync(testContext(t), &kgo.Record{Value: value}).FirstErr(); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	adm := c.Admin(t)
	start := time.Now()
	if err := reassign(t, adm, "slow", []int32{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	waitReplicas(t, c, "slow", []int32{1, 2, 3}, 60*time.Second)
	took := time.Since(start)
	total := float64(records * len(value))
	t.Logf("%s throttle: moved %.1f MiB in %s: %.2f MiB/s with a %.2f MiB/s throttle", side, total/(1<<20), took.Round(time.Millisecond),
		total/(1<<20)/took.Seconds(), float64(rate)/(1<<20))
	if min := time.Duration((total - 2*rate) / rate * float64(time.Second)); took < min*9/10 {
		t.Fatalf("the throttled move took %s, faster than the throttle allows (%s)", took, min)
	}
}
