package integration

// A "bridge" partition (reliability.md T4): nodes A and C cannot reach each other,
// while B reaches both. A is the controller, so C's heartbeats stop and it is fenced,
// although it still reaches B.

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestBridgePartitionKeepsEveryPartitionFlowing cuts the link between the controller and
// another node, both ways, Raft and Kafka. Every partition of an RF 3 topic keeps
// taking acks=all writes through a client of the two nodes on the controller's side
// (the node cut from the controller is fenced and its leaderships move); after the cut
// heals, every ISR is full again and a consumer reads every acknowledged record back,
// each partition in order.
func TestBridgePartitionKeepsEveryPartitionFlowing(t *testing.T) {
	t.Parallel()
	const topic, partitions = "bridge", 3
	c := StartCluster(t, 3, WithProperty("replica.lag.time.max.ms", "2000"))
	c.CreateTopicRF(t, topic, partitions, 3, nil)
	waitFullISR(t, c, topic)
	a := c.Controller()
	cNode := (a + 2) % 3
	b := 3 - a - cNode
	cl := newClient(t, []string{c.Addr(a), c.Addr(b)}, kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordRetries(1000), kgo.RecordDeliveryTimeout(45*time.Second))
	acked := map[int32][]string{}
	write := func(round string) {
		t.Helper()
		for p := range int32(partitions) {
			v := fmt.Sprintf("%s-%d", round, p)
			ctx, cancel := context.WithTimeout(testContext(t), 60*time.Second)
			err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)}).FirstErr()
			cancel()
			if err != nil {
				t.Fatalf("%s: produce to partition %d: %v", round, p, err)
			}
			acked[p] = append(acked[p], v)
		}
	}
	write("before")

	c.CutLink(a, cNode)
	t.Cleanup(c.Heal)
	testwait.For(t, 30*time.Second, func() error {
		im := c.Node(a).Image()
		if br := im.Brokers[int32(cNode)]; br == nil || !br.Fenced {
			return fmt.Errorf("node-%d not fenced yet", cNode)
		}
		return nil
	})
	for i := range 3 {
		write(fmt.Sprintf("cut%d", i))
	}
	im := c.Node(a).Image()
	for _, p := range im.Topics[topic].Partitions {
		if p.Leader == int32(cNode) || slices.Contains(p.ISR, int32(cNode)) {
			t.Fatalf("partition %d: leader %d, ISR %v with node-%d fenced", p.ID, p.Leader, p.ISR, cNode)
		}
	}

	c.Heal()
	waitFullISR(t, c, topic)
	write("healed")

	reader := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[int32][]string{}
	want := 0
	for _, vs := range acked {
		want += len(vs)
	}
	ctx, cancel := context.WithTimeout(testContext(t), 60*time.Second)
	defer cancel()
	for n := 0; n < want; {
		fs := reader.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d acknowledged records before the deadline: %v", n, want, got)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], string(r.Value))
			n++
		})
	}
	for p := range int32(partitions) {
		if !slices.Equal(got[p], acked[p]) {
			t.Errorf("partition %d read %v, acknowledged %v", p, got[p], acked[p])
		}
	}
}
