package integration

// Follower fetching (KIP-392) with racks: three nodes in racks a, b and c with
// replica.selector.class = RackAwareReplicaSelector; a consumer with client.rack reads
// from the in-sync replica in its rack, and back from the leader once that replica is
// stopped.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var testRacks = []string{"a", "b", "c"}

// startRackedCluster starts three nodes, node i in rack testRacks[i], with the
// rack-aware replica selector when selector is set, and creates topic with one
// partition on all three. It returns the cluster, the partition's leader and a
// follower.
func startRackedCluster(t *testing.T, topic string, selector bool) (c *Cluster, leader, follower int) {
	t.Helper()
	var opts []Option
	if selector {
		opts = append(opts, WithProperty("replica.selector.class", "org.apache.kafka.common.replica.RackAwareReplicaSelector"))
	}
	for i, r := range testRacks {
		opts = append(opts, WithNodeProperty(i, "broker.rack", r))
	}
	c = StartCluster(t, 3, opts...)
	c.CreateTopicRF(t, topic, 1, 3, nil)
	testwait.For(t, 30*time.Second, func() error {
		p := c.WaitConverged().Topics[topic].Partitions[0]
		if p.Leader < 0 || len(p.ISR) != 3 {
			return fmt.Errorf("partition %v: want a leader and all three in sync", partitionView(p))
		}
		leader = int(p.Leader)
		return nil
	})
	return c, leader, (leader + 1) % 3
}

// fetchedFrom counts, per broker, the records a kgo client read (its
// HookFetchBatchRead).
type fetchedFrom struct {
	mu     sync.Mutex
	counts map[int32]int
}

func (f *fetchedFrom) OnFetchBatchRead(meta kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.counts == nil {
		f.counts = map[int32]int{}
	}
	f.counts[meta.NodeID] += m.NumRecords
}

func (f *fetchedFrom) of(node int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[int32(node)]
}

// fetchesSeen counts the Fetch requests node i received, any version.
func fetchesSeen(c *Cluster, i int) int {
	l := c.net.requestLog(i)
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for k, v := range l.seen {
		if k[0] == int16(kmsg.Fetch) {
			n += v
		}
	}
	return n
}

// produceNumbered writes values from..to-1 to topic with acks=all.
func produceNumbered(t *testing.T, cl *kgo.Client, topic string, from, to int) {
	t.Helper()
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i))})
	}
	if err := cl.ProduceSync(testContext(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// consumeNumbered polls cl until it has read every value below to, in order from
// *next, or fails t.
func consumeNumbered(t *testing.T, cl *kgo.Client, next *int, to int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(testContext(t), 60*time.Second)
	defer cancel()
	for *next < to {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read up to %d of %d: %v", *next, to, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if got := string(r.Value); got != fmt.Sprint(*next) {
				t.Fatalf("record at offset %d is %q, want %d", r.Offset, got, *next)
			}
			*next++
		})
	}
}

// A kgo consumer in rack b (client.rack) reads every record from the in-sync follower
// in rack b, not from the leader: the leader answers its first fetch with
// PreferredReadReplica and the follower serves the rest up to its high watermark.
// When that follower stops, the consumer goes back to the leader and keeps reading,
// every record once, in order: franz-go re-checks with the leader after
// RecheckPreferredReplicaInterval (2 s here; its default, 30 minutes, keeps it retrying
// the stopped follower that long, as against Kafka), and the leader, which offers only
// in-sync replicas, keeps it.
func TestFollowerFetch_RackAwareKgo(t *testing.T) {
	t.Parallel()
	const topic = "rack-read"
	c, leader, follower := startRackedCluster(t, topic, true)
	producer := c.Client(t, kgo.RequiredAcks(kgo.AllISRAcks()))
	produceNumbered(t, producer, topic, 0, 200)

	counts := &fetchedFrom{}
	consumer := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.Rack(testRacks[follower]), kgo.WithHooks(counts), kgo.RecheckPreferredReplicaInterval(2*time.Second))
	next := 0
	consumeNumbered(t, consumer, &next, 200)
	if counts.of(follower) == 0 || fetchesSeen(c, follower) == 0 {
		t.Fatalf("records read from the follower in rack %s (node %d): %d of 200 (leader %d: %d), fetches it saw: %d",
			testRacks[follower], follower, counts.of(follower), leader, counts.of(leader), fetchesSeen(c, follower))
	}
	t.Logf("records read: %d from the follower in rack %s, %d from the leader", counts.of(follower), testRacks[follower], counts.of(leader))

	c.Stop(follower)
	stopped := time.Now()
	fromLeader := counts.of(leader)
	produceNumbered(t, producer, topic, 200, 400)
	consumeNumbered(t, consumer, &next, 400)
	if got := counts.of(leader) - fromLeader; got == 0 {
		t.Fatalf("after the follower stopped, no record came from the leader (%d)", leader)
	}
	t.Logf("follower stopped: all 200 new records read from the leader %s after the stop", time.Since(stopped).Round(time.Millisecond))
}

// Without replica.selector.class (Kafka's default) a consumer with client.rack stays
// on the leader: the follower sees no fetch.
func TestFollowerFetch_NoSelectorKeepsLeader(t *testing.T) {
	t.Parallel()
	const topic = "rack-none"
	c, leader, follower := startRackedCluster(t, topic, false)
	produceNumbered(t, c.Client(t, kgo.RequiredAcks(kgo.AllISRAcks())), topic, 0, 50)
	counts := &fetchedFrom{}
	consumer := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.Rack(testRacks[follower]), kgo.WithHooks(counts))
	next := 0
	consumeNumbered(t, consumer, &next, 50)
	if counts.of(leader) != 50 || fetchesSeen(c, follower) != 0 {
		t.Fatalf("read %d from the leader, follower saw %d fetches", counts.of(leader), fetchesSeen(c, follower))
	}
}

// kcat (librdkafka, KIP-392 since 1.3) with client.rack reads from the follower in its
// rack: every message's "broker" is the follower.
func TestFollowerFetch_Kcat(t *testing.T) {
	t.Parallel()
	kcatBinary(t)
	const topic = "rack-kcat"
	c, _, follower := startRackedCluster(t, topic, true)
	produceNumbered(t, c.Client(t, kgo.RequiredAcks(kgo.AllISRAcks())), topic, 0, 100)
	// kcat's -e stops at the end of the partition as the replica it reads from sees it:
	// the follower learns the high watermark on its next fetch, so wait for that first
	// (a follower's high watermark may trail the leader's, in Kafka too).
	testwait.For(t, 30*time.Second, func() error {
		if sp := rackFetch(t, c, follower, topic, testRacks[follower]); sp.HighWatermark != 100 {
			return fmt.Errorf("follower %d: high watermark %d, code %d; want 100", follower, sp.HighWatermark, sp.ErrorCode)
		}
		return nil
	})
	out := runKcat(t, "", "-C", "-b", c.Addr(0), "-t", topic, "-e", "-o", "beginning", "-J", "-q",
		"-X", "client.rack="+testRacks[follower])
	lines := strings.Split(strings.TrimSpace(out), "\n")
	fromFollower := strings.Count(out, fmt.Sprintf(`"broker":%d,`, follower))
	if len(lines) != 100 || fromFollower == 0 {
		t.Fatalf("kcat read %d messages, %d from the follower %d:\n%s", len(lines), fromFollower, follower, out)
	}
	t.Logf("kcat: %d of %d messages from the follower in rack %s", fromFollower, len(lines), testRacks[follower])
}

// rackFetch sends node i a consumer's Fetch v12 of topic's partition 0 from offset 0,
// in the client rack rack, and returns the partition's answer.
func rackFetch(t *testing.T, c *Cluster, i int, topic, rack string) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxWaitMillis, req.MaxBytes, req.Rack = 12, -1, 0, 1<<20, rack
	req.SessionEpoch = -1 // no session
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset, rp.PartitionMaxBytes = -1, -1, -1, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := c.RequestTo(testContext(t), t, i, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
}

// On the wire: the leader answers a fetch from the follower's rack with no records
// and PreferredReadReplica = that follower; from its own rack, or with no rack, it
// serves the records itself (-1). Once the follower has left the ISR (stopped), the
// leader serves every rack itself: a consumer sent back to it stays there.
func TestFollowerFetch_LeaderChoosesInSyncReplicaInRack(t *testing.T) {
	t.Parallel()
	const topic = "rack-wire"
	c, leader, follower := startRackedCluster(t, topic, true)
	produceNumbered(t, c.Client(t, kgo.RequiredAcks(kgo.AllISRAcks())), topic, 0, 10)
	sp := rackFetch(t, c, leader, topic, testRacks[follower])
	if sp.ErrorCode != 0 || sp.PreferredReadReplica != int32(follower) || len(sp.RecordBatches) != 0 || sp.HighWatermark != 10 {
		t.Fatalf("fetch from rack %s: code %d, preferred %d, %d record bytes, HW %d; want follower %d, no records, HW 10",
			testRacks[follower], sp.ErrorCode, sp.PreferredReadReplica, len(sp.RecordBatches), sp.HighWatermark, follower)
	}
	for _, rack := range []string{testRacks[leader], "", "elsewhere"} {
		if sp := rackFetch(t, c, leader, topic, rack); sp.PreferredReadReplica != -1 || len(sp.RecordBatches) == 0 {
			t.Fatalf("fetch from rack %q: preferred %d, %d record bytes; want the leader's records", rack, sp.PreferredReadReplica, len(sp.RecordBatches))
		}
	}
	c.Stop(follower)
	testwait.For(t, 30*time.Second, func() error {
		if p := c.Image(leader).Topics[topic].Partitions[0]; slices.Contains(p.ISR, int32(follower)) {
			return fmt.Errorf("follower %d still in the ISR %v", follower, p.ISR)
		}
		return nil
	})
	testwait.For(t, 10*time.Second, func() error {
		if sp := rackFetch(t, c, leader, topic, testRacks[follower]); sp.PreferredReadReplica != -1 || len(sp.RecordBatches) == 0 {
			return fmt.Errorf("after the follower left the ISR: preferred %d, %d record bytes", sp.PreferredReadReplica, len(sp.RecordBatches))
		}
		return nil
	})
}
