package integration

// KIP-227 fetch sessions end to end: kgo consumers (sessions on by default) and the
// brokers' followers (a session per leader connection) fetch incrementally; a broker
// restart loses every session it held, and both sides fall back to full fetches.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchSessions_ConsumerFollowersRestart: a kgo consumer reads 48 partitions RF 3
// while waves of records arrive on a few of them at a time; it gets every record once,
// in order, while every node holds follower and consumer sessions; every ISR stays
// full and a follower's high watermark follows the leader's; after a restart of a node
// (its sessions lost) the consumer and the followers carry on.
func TestFetchSessions_ConsumerFollowersRestart(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3)
	const topic, partitions = "sessions", 48
	c.CreateTopicRF(t, topic, partitions, 3, nil)
	prod := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	cons := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(300*time.Millisecond))
	sent := map[int32]int{} // records produced per partition
	got := map[int32]int{}  // records consumed per partition
	wave := func(name string, parts ...int32) {
		t.Helper()
		var rs []*kgo.Record
		for _, p := range parts {
			for range 5 {
				rs = append(rs, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "%d-%d", p, sent[p])})
				sent[p]++
			}
		}
		if err := prod.ProduceSync(testContext(t), rs...).FirstErr(); err != nil {
			t.Fatalf("%s: produce: %v", name, err)
		}
		consumeUntil(t, cons, got, sent, name)
	}
	wave("first wave", 0, 1, 2, 3, 4, 5, 6, 7)
	wave("second wave", 20, 21)
	wave("third wave", 0, 47)
	waitSessions(t, c)
	checkInSync(t, c, topic, partitions, sent)

	c.Stop(1)
	c.Restart(1)
	checkInSync(t, c, topic, partitions, sent)
	// Node 1 leads again (its preferred partitions): followers and the consumer fetch
	// from the node that lost their sessions.
	if _, err := c.Admin(t).ElectLeaders(testContext(t), kadm.ElectPreferredReplica, nil); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, convergeTimeout, func() error {
		for _, p := range c.Image(0).Topics[topic].Partitions {
			if p.Leader != p.Replicas[0] {
				return fmt.Errorf("partition %d led by %d, preferred %d", p.ID, p.Leader, p.Replicas[0])
			}
		}
		return nil
	})
	wave("after the restart", 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
		24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47)
	wave("one more", 5, 40)
	waitSessions(t, c) // node 1's again, after it lost them
	checkInSync(t, c, topic, partitions, sent)
}

// waitSessions waits until every node holds at least three fetch sessions: its two
// followers' and the consumer's.
func waitSessions(t *testing.T, c *Cluster) {
	t.Helper()
	for i := range 3 {
		testwait.For(t, convergeTimeout, func() error {
			fams := c.scrapeNode(t, i)
			if n := metricSum(fams, "kafka_server_fetchsessioncache_numincrementalfetchsessions", nil); n < 3 {
				return fmt.Errorf("node-%d holds %v fetch sessions, want the two followers' and the consumer's", i, n)
			}
			return nil
		})
	}
}

// consumeUntil polls cons until it has every record sent, checking that each
// partition's records arrive once and in order.
func consumeUntil(t *testing.T, cons *kgo.Client, got, sent map[int32]int, name string) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !equalCounts(got, sent) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: consumed %v, produced %v", name, got, sent)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		fs := cons.PollFetches(ctx)
		cancel()
		for _, e := range fs.Errors() {
			if !errors.Is(e.Err, context.DeadlineExceeded) {
				t.Logf("%s: fetch error (retried by kgo): %v", name, e.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			want := fmt.Sprintf("%d-%d", r.Partition, got[r.Partition])
			if string(r.Value) != want || r.Offset != int64(got[r.Partition]) {
				t.Fatalf("%s: partition %d offset %d holds %q, want %q at offset %d", name, r.Partition, r.Offset, r.Value, want, got[r.Partition])
			}
			got[r.Partition]++
		})
	}
}

func equalCounts(a, b map[int32]int) bool {
	for p, n := range b {
		if a[p] != n {
			return false
		}
	}
	for p, n := range a {
		if b[p] != n {
			return false
		}
	}
	return true
}

// checkInSync waits until every partition's ISR holds all three replicas and each
// follower's high watermark (read by a sessionless fetch from the follower, KIP-392)
// is the count of records sent.
func checkInSync(t *testing.T, c *Cluster, topic string, partitions int32, sent map[int32]int) {
	t.Helper()
	testwait.For(t, convergeTimeout, func() error {
		im := c.Image(0)
		tp, ok := im.Topics[topic]
		if !ok {
			return fmt.Errorf("no topic %s in node-0's image", topic)
		}
		for p := range partitions {
			st := tp.Partitions[p]
			if len(st.ISR) != 3 {
				return fmt.Errorf("partition %d: ISR %v", p, st.ISR)
			}
			for _, r := range st.Replicas {
				if r == st.Leader {
					continue
				}
				if hw, err := followerHighWatermark(t, c, int(r), topic, p); err != nil || hw != int64(sent[p]) {
					return fmt.Errorf("partition %d: follower %d's high watermark %d (%v), want %d", p, r, hw, err, sent[p])
				}
			}
		}
		return nil
	})
}

// followerHighWatermark fetches partition p from node i, a follower, without a session
// (v12: a follower serves consumers up to its own high watermark).
func followerHighWatermark(t *testing.T, c *Cluster, i int, topic string, p int32) (int64, error) {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxBytes, req.SessionEpoch = 12, -1, 1, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = p, 1, -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.RequestTo(ctx, t, i, req)
	if err != nil {
		return -1, err
	}
	fr := resp.(*kmsg.FetchResponse)
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		return -1, fmt.Errorf("malformed answer: %+v", fr)
	}
	sp := fr.Topics[0].Partitions[0]
	if sp.ErrorCode != 0 {
		return -1, fmt.Errorf("error %d", sp.ErrorCode)
	}
	return sp.HighWatermark, nil
}
