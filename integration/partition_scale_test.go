package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestPartitionScale_OfflineReplicaMovesLeadership: node 0 cannot open its replica of a
// partition it would lead (its directory path is taken by a file). The replica is not
// silently advertised: node 0 reports it, the controller takes it out of the ISR and
// elects node 1, produce and fetch through node 0 answer KAFKA_STORAGE_ERROR, and clients
// produce and consume through the new leader. Once the path is free again the replica
// opens at the next image, follows and rejoins the ISR.
func TestPartitionScale_OfflineReplicaMovesLeadership(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3)
	const topic = "offline-replica"
	blocker := filepath.Join(c.nodes[0].dir, "logs", topic+"-0")
	if err := os.WriteFile(blocker, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	createWithAssignment(t, c, topic, [][]int32{{0, 1, 2}})
	testwait.For(t, 20*time.Second, func() error {
		p := c.Image(c.Controller()).Topics[topic].Partitions[0]
		if p.Leader == 0 || p.Leader < 0 || slices.Contains(p.ISR, 0) {
			return fmt.Errorf("leader %d, ISR %v", p.Leader, p.ISR)
		}
		return nil
	})

	ctx := testContext(t)
	produce := kmsg.NewPtrProduceRequest()
	produce.Acks, produce.TimeoutMillis = -1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = topic
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = recordBatch("v")
	pt.Partitions = append(pt.Partitions, pp)
	produce.Topics = append(produce.Topics, pt)
	resp, err := c.RequestTo(ctx, t, 0, produce)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.KafkaStorageError.Code {
		t.Fatalf("produce to node 0: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
	}
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.MaxWaitMillis, fetch.MaxBytes = 11, 10, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	fresp, err := c.RequestTo(ctx, t, 0, fetch)
	if err != nil {
		t.Fatal(err)
	}
	if code := fresp.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.KafkaStorageError.Code {
		t.Fatalf("fetch from node 0: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
	}

	cl := c.Client(t, kgo.ProduceRequestTimeout(5*time.Second), kgo.RecordDeliveryTimeout(15*time.Second))
	for i := 0; i < 10; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(recordValue("v", i))}).FirstErr(); err != nil {
			t.Fatalf("produce through the new leader: %v", err)
		}
	}

	// The path is free again; any image change makes node 0 retry the open.
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	c.CreateTopic(t, "offline-replica-nudge", 1, nil)
	testwait.For(t, 30*time.Second, func() error {
		p := c.Image(c.Controller()).Topics[topic].Partitions[0]
		if !slices.Contains(p.ISR, 0) {
			return fmt.Errorf("ISR %v without node 0", p.ISR)
		}
		return nil
	})
	consumeN(t, c, topic, 10)
}

// consumeN reads n records of topic from the start and fails past a deadline.
func consumeN(t *testing.T, c *Cluster, topic string, n int) {
	t.Helper()
	cl := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(testContext(t), 20*time.Second)
	defer cancel()
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records of %s", got, n, topic)
		}
		fs.EachRecord(func(*kgo.Record) { got++ })
	}
}
