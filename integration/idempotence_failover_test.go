package integration

// The idempotent producer across failures: a leader killed -9 and then the controller
// while kgo produces (every acknowledged record exactly once, replicas identical), a
// retry of a batch the old leader wrote answered by the new leader with the original
// offset, a retry recognised after a single node's kill -9 (with and without
// snapshots), and producer ids unique across brokers and a controller failover.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// failoverProperties make a 3-node cluster notice a killed node within seconds.
var failoverProperties = []Option{
	WithProperty("min.insync.replicas", "2"),
	WithProperty("broker.session.timeout.ms", "2000"),
	WithProperty("broker.heartbeat.interval.ms", "250"),
	WithProperty("replica.lag.time.max.ms", "2000"),
}

// startReplicated starts 3 nodes with failoverProperties and an RF-3 topic whose
// replicas are all open.
func startReplicated(t *testing.T, topic string) *Cluster {
	t.Helper()
	c := StartCluster(t, 3, failoverProperties...)
	c.CreateTopicRF(t, topic, 1, 3, nil)
	testwait.For(t, 20*time.Second, func() error {
		for i := range 3 {
			if _, err := replicaLEO(t, c, i, topic, 0); err != nil {
				return fmt.Errorf("node-%d has not opened its replica: %w", i, err)
			}
		}
		return nil
	})
	return c
}

// waitISR waits until the partition's ISR (in observer's image) has n members and a
// leader other than not (-1: any).
func waitISR(t *testing.T, c *Cluster, observer int, topic string, n int, not int32) partitionView {
	t.Helper()
	var p partitionView
	testwait.For(t, 60*time.Second, func() error {
		var err error
		if p, err = partitionIn(c, observer, topic, 0); err != nil {
			return err
		}
		if len(p.ISR) != n || p.Leader < 0 || p.Leader == not {
			return fmt.Errorf("isr %v leader %d", p.ISR, p.Leader)
		}
		return nil
	})
	return p
}

func TestIdempotence_FailoverExactlyOnce(t *testing.T) {
	t.Parallel()
	const topic = "idem-failover"
	c := startReplicated(t, topic)
	cl := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordDeliveryTimeout(90*time.Second),
		kgo.MetadataMinAge(100*time.Millisecond), kgo.ProducerLinger(time.Millisecond))
	var mu sync.Mutex
	acked := map[string]int64{} // value -> acknowledged offset
	var failures []error
	var sent atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		defer wg.Wait()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			value := fmt.Sprintf("f%06d", i)
			wg.Add(1)
			sent.Add(1)
			cl.Produce(context.Background(), kgo.StringRecord(value), func(r *kgo.Record, err error) {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failures = append(failures, err)
					return
				}
				acked[value] = r.Offset
			})
			if i%10 == 9 {
				time.Sleep(time.Millisecond) // pace: a few thousand records a second
			}
		}
	}()
	ackedCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	waitAcked := func(n int) {
		t.Helper()
		testwait.For(t, 60*time.Second, func() error {
			if got := ackedCount(); got < n {
				return fmt.Errorf("%d of %d acknowledged", got, n)
			}
			return nil
		})
	}
	waitAcked(500)
	observer := c.live()[0]
	leader := mustPartitionIn(t, c, observer, topic, 0).Leader
	if int(leader) == observer {
		observer = (observer + 1) % 3
	}
	c.Kill(int(leader))
	waitISR(t, c, observer, topic, 2, leader)
	waitAcked(ackedCount() + 500)
	c.Start(int(leader))
	waitISR(t, c, observer, topic, 3, -1)
	ctrl := c.Controller()
	c.Kill(ctrl)
	waitAcked(ackedCount() + 500)
	c.Start(ctrl)
	waitISR(t, c, (ctrl+1)%3, topic, 3, -1)
	waitAcked(ackedCount() + 300)
	close(stop)
	<-done
	if len(failures) > 0 {
		t.Fatalf("%d records failed (of %d sent), first: %v", len(failures), sent.Load(), failures[0])
	}
	// Replicas converge, byte-identical below the HW.
	var hw int64
	testwait.For(t, 30*time.Second, func() error {
		var logs [][]byte
		var hws []int64
		for i := range 3 {
			h, data, err := replicaLog(t, c, i, topic, 0)
			if err != nil {
				return err
			}
			hws, logs = append(hws, h), append(logs, data)
		}
		if hws[0] != hws[1] || hws[1] != hws[2] {
			return fmt.Errorf("high watermarks %v", hws)
		}
		if !bytes.Equal(logs[0], logs[1]) || !bytes.Equal(logs[1], logs[2]) {
			return errors.New("replica logs differ below the HW")
		}
		hw = hws[0]
		return nil
	})
	// Every record in the log once (no duplicate), in the order sent, and every
	// acknowledged one at its acknowledged offset (no gap).
	seen := map[string]int64{}
	last := ""
	cons := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for got := int64(0); got < hw; {
		fs := cons.PollFetches(testContext(t))
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if prev, dup := seen[v]; dup {
				t.Fatalf("%s at offsets %d and %d", v, prev, r.Offset)
			}
			if v <= last {
				t.Fatalf("%s at offset %d after %s", v, r.Offset, last)
			}
			seen[v], last = r.Offset, v
			got = max(got, r.Offset+1)
		})
	}
	for v, off := range acked {
		if at, ok := seen[v]; !ok || at != off {
			t.Fatalf("acknowledged %s at offset %d, found at %d (present %v)", v, off, at, ok)
		}
	}
	t.Logf("%d records acknowledged exactly once across a leader and a controller kill", len(acked))
}

// A batch the old leader wrote and replicated but whose acknowledgement the producer
// never saw (here: acks=1, then the leader dies) is retried at the new leader, which
// answers with the original offset and writes nothing.
func TestIdempotence_NewLeaderAnswersRetryWithOriginalOffset(t *testing.T) {
	t.Parallel()
	const topic = "idem-retry"
	c := startReplicated(t, topic)
	leader := int(mustPartitionIn(t, c, 0, topic, 0).Leader)
	pid, epoch := initProducerID(t, c, leader)
	for seq := int32(0); seq < 3; seq++ {
		if sp := produceRaw(t, c, leader, topic, -1, idempotentBatch(pid, epoch, seq, fmt.Sprintf("r%d", seq))); sp.ErrorCode != 0 {
			t.Fatalf("batch %d: %v", seq, kerr.ErrorForCode(sp.ErrorCode))
		}
	}
	retry := idempotentBatch(pid, epoch, 3, "r3", "r4")
	sp := produceRaw(t, c, leader, topic, 1, bytes.Clone(retry))
	if sp.ErrorCode != 0 || sp.BaseOffset != 3 {
		t.Fatalf("batch 3: %v at %d", kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
	}
	testwait.For(t, 20*time.Second, func() error {
		for i := range 3 {
			if leo, err := replicaLEO(t, c, i, topic, 0); err != nil || leo != 5 {
				return fmt.Errorf("node-%d log end %d %v", i, leo, err)
			}
		}
		return nil
	})
	observer := (leader + 1) % 3
	c.Kill(leader)
	next := int(waitISR(t, c, observer, topic, 2, int32(leader)).Leader)
	testwait.For(t, 20*time.Second, func() error { return leads(c, next, topic, 0) })
	sp = produceRaw(t, c, next, topic, -1, retry)
	if sp.ErrorCode != 0 || sp.BaseOffset != 3 {
		t.Fatalf("retry at the new leader node-%d: %v at offset %d, originally 3", next, kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
	}
	if leo := mustReplicaLEO(t, c, next, topic, 0); leo != 5 {
		t.Fatalf("the retry was written again: log end %d", leo)
	}
	if sp := produceRaw(t, c, next, topic, -1, idempotentBatch(pid, epoch, 5, "r5")); sp.ErrorCode != 0 || sp.BaseOffset != 5 {
		t.Fatalf("next batch: %v at %d", kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
	}
}

// Kill -9 a single node between two batches of one producer: after recovery the retry
// of the last batch is still recognised — from the log alone (no snapshot: the only
// segment never rolled) and from a roll snapshot plus the log after it.
func TestIdempotence_RestartRecognisesRetry(t *testing.T) {
	for _, tc := range []struct {
		name         string
		segmentBytes string
		wantSnapshot bool
	}{{"no snapshot", "1073741824", false}, {"snapshot", "600", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := StartCluster(t, 1)
			topic := "idem-restart"
			c.CreateTopic(t, topic, 1, map[string]*string{"segment.bytes": &tc.segmentBytes})
			pid, epoch := initProducerID(t, c, 0)
			var last []byte
			for seq := int32(0); seq < 20; seq++ {
				last = idempotentBatch(pid, epoch, seq, fmt.Sprintf("s%02d", seq))
				if sp := produceRaw(t, c, 0, topic, -1, bytes.Clone(last)); sp.ErrorCode != 0 || sp.BaseOffset != int64(seq) {
					t.Fatalf("batch %d: %v at %d", seq, kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
				}
			}
			snaps, _ := filepath.Glob(filepath.Join(c.nodes[0].dir, "logs", topic+"-0", "*.snapshot"))
			if (len(snaps) > 0) != tc.wantSnapshot {
				t.Fatalf("snapshots %v", snaps)
			}
			c.Kill(0)
			c.Restart(0)
			var sp kmsg.ProduceResponseTopicPartition
			testwait.For(t, 20*time.Second, func() error {
				if err := leads(c, 0, topic, 0); err != nil {
					return err
				}
				sp = produceRaw(t, c, 0, topic, -1, last)
				return kerr.ErrorForCode(sp.ErrorCode)
			})
			if sp.BaseOffset != 19 || mustReplicaLEO(t, c, 0, topic, 0) != 20 {
				t.Fatalf("retry after restart answered offset %d (originally 19), log end %d", sp.BaseOffset, mustReplicaLEO(t, c, 0, topic, 0))
			}
			if sp := produceRaw(t, c, 0, topic, -1, idempotentBatch(pid, epoch, 21, "gap")); sp.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
				t.Fatalf("a gap after restart: %v", kerr.ErrorForCode(sp.ErrorCode))
			}
			// A clean stop leaves the 20 batches (or those after the roll snapshot) to the
			// next start's replay rather than snapshot them (fewer than
			// replication.shutdownReplayBatches); the retry is still recognised.
			c.Stop(0)
			if _, err := os.Stat(filepath.Join(c.nodes[0].dir, "logs", topic+"-0", fmt.Sprintf("%020d.snapshot", 20))); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a clean-shutdown snapshot of a short tail: %v", err)
			}
			c.Restart(0)
			testwait.For(t, 20*time.Second, func() error {
				if err := leads(c, 0, topic, 0); err != nil {
					return err
				}
				sp = produceRaw(t, c, 0, topic, -1, last)
				return kerr.ErrorForCode(sp.ErrorCode)
			})
			if sp.BaseOffset != 19 {
				t.Fatalf("retry after a clean restart answered offset %d", sp.BaseOffset)
			}
		})
	}
}

// Every broker hands out producer ids concurrently while the controller is killed
// mid-way and comes back: no id is ever given twice, and each 1000-id block belongs to
// one broker.
func TestProducerIDs_UniqueAcrossBrokersAndControllerFailover(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, failoverProperties...)
	const perNode = 1500 // more than one block each, so the 90 % prefetch runs
	var mu sync.Mutex
	owner := map[int64]int{} // id -> node
	var dup error
	var total atomic.Int64
	run := func(i, n int) *sync.WaitGroup {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr(i)))
			if err != nil {
				return
			}
			defer cl.Close()
			deadline := time.Now().Add(90 * time.Second)
			for got := 0; got < n && time.Now().Before(deadline); {
				req := kmsg.NewPtrInitProducerIDRequest()
				req.ProducerID, req.ProducerEpoch = -1, -1
				ctx, cancel := context.WithTimeout(context.Background(), wireTimeout)
				resp, err := cl.SeedBrokers()[0].Request(ctx, req)
				cancel()
				if err == nil && resp.(*kmsg.InitProducerIDResponse).ErrorCode != 0 {
					err = kerr.ErrorForCode(resp.(*kmsg.InitProducerIDResponse).ErrorCode)
				}
				if err != nil {
					// The node is down (killed, then restarting) or has no block yet
					// (COORDINATOR_LOAD_IN_PROGRESS while the controller moves): retry.
					time.Sleep(20 * time.Millisecond)
					continue
				}
				r := resp.(*kmsg.InitProducerIDResponse)
				mu.Lock()
				if prev, ok := owner[r.ProducerID]; ok && dup == nil {
					dup = fmt.Errorf("producer id %d from node-%d and node-%d", r.ProducerID, prev, i)
				}
				owner[r.ProducerID] = i
				mu.Unlock()
				got++
				total.Add(1)
			}
		}()
		return &wg
	}
	var groups []*sync.WaitGroup
	for i := range 3 {
		groups = append(groups, run(i, perNode))
	}
	testwait.For(t, 60*time.Second, func() error {
		if n := total.Load(); n < perNode {
			return fmt.Errorf("%d ids so far", n)
		}
		return nil
	})
	ctrl := c.Controller()
	c.Kill(ctrl)
	c.Start(ctrl)
	for _, g := range groups {
		g.Wait()
	}
	mu.Lock()
	defer mu.Unlock()
	if dup != nil {
		t.Fatal(dup)
	}
	blocks := map[int64]int{}
	for id, node := range owner {
		if prev, ok := blocks[id/1000]; ok && prev != node {
			t.Fatalf("block %d used by node-%d and node-%d", id/1000, prev, node)
		}
		blocks[id/1000] = node
	}
	if len(owner) < 3*perNode {
		t.Fatalf("only %d ids handed out", len(owner))
	}
	t.Logf("%d unique producer ids in %d blocks", len(owner), len(blocks))
}
