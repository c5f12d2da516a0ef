package integration

// "Bridge" partitions (reliability.md T4): two nodes cannot reach each other, while
// the third reaches both. With the controller at one end, the node at the other end
// loses its heartbeats and is fenced, although it still reaches the middle node; with
// the controller in the middle, nobody is fenced and only follower fetching across
// the cut fails.

import (
	"context"
	"fmt"
	"maps"
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
	w := newBridgeWriter(t, c, topic, partitions, a, b)
	w.write("before")

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
		w.write(fmt.Sprintf("cut%d", i))
	}
	im := c.Node(a).Image()
	for _, p := range im.Topics[topic].Partitions {
		if p.Leader == int32(cNode) || slices.Contains(p.ISR, int32(cNode)) {
			t.Fatalf("partition %d: leader %d, ISR %v with node-%d fenced", p.ID, p.Leader, p.ISR, cNode)
		}
	}

	c.Heal()
	waitFullISR(t, c, topic)
	w.write("healed")
	w.readBack()
}

// TestBridgeAroundTheControllerKeepsEveryPartitionFlowing cuts the link between the two
// nodes that are not the controller, both ways, Raft and Kafka, with one partition led
// by each node. Both still reach the controller, so neither is fenced and no
// leadership moves; once written to, each drops the other from the ISRs it leads,
// since the other cannot fetch from it, and every partition keeps taking acks=all
// writes (two in sync of three, min.insync.replicas=2) through a client of all three. After the cut heals,
// every ISR is full again and a consumer reads every acknowledged record back, each
// partition in order.
func TestBridgeAroundTheControllerKeepsEveryPartitionFlowing(t *testing.T) {
	t.Parallel()
	const topic, partitions = "bridged", 3
	c := StartCluster(t, 3, WithProperty("replica.lag.time.max.ms", "2000"), WithProperty("min.insync.replicas", "2"))
	a := c.Controller()
	b, d := (a+1)%3, (a+2)%3
	createWithAssignment(t, c, topic, [][]int32{{0, 1, 2}, {1, 2, 0}, {2, 0, 1}}) // partition i led by node i
	waitFullISR(t, c, topic)
	w := newBridgeWriter(t, c, topic, partitions, a, b, d)
	w.write("before")

	c.CutLink(b, d)
	t.Cleanup(c.Heal)
	// As in Kafka, a follower at the leader's log end stays in sync while nothing is
	// written, fetching or not: the first write after the cut makes the one that cannot
	// fetch lag, and its leader drops it once replica.lag.time.max.ms has passed since
	// it last caught up; the write waits for that.
	for i := range 3 {
		w.write(fmt.Sprintf("cut%d", i))
	}
	testwait.For(t, 30*time.Second, func() error {
		im := c.Node(a).Image()
		for _, p := range im.Topics[topic].Partitions {
			switch {
			case p.Leader != p.ID:
				return fmt.Errorf("partition %d led by node-%d", p.ID, p.Leader)
			case p.Leader == int32(b) && slices.Contains(p.ISR, int32(d)), p.Leader == int32(d) && slices.Contains(p.ISR, int32(b)):
				return fmt.Errorf("partition %d: ISR %v still holds the node its leader cannot reach", p.ID, p.ISR)
			}
		}
		return nil
	})
	w.write("shrunk")
	im := c.Node(a).Image()
	for id, br := range im.Brokers {
		if br.Fenced {
			t.Fatalf("node-%d fenced, though it still reaches the controller", id)
		}
	}
	for _, p := range im.Topics[topic].Partitions {
		if p.Leader != p.ID || len(p.ISR) < 2 {
			t.Fatalf("partition %d after the writes: leader %d, ISR %v", p.ID, p.Leader, p.ISR)
		}
	}

	c.Heal()
	waitFullISR(t, c, topic)
	w.write("healed")
	w.readBack()
}

// bridgeWriter writes one acks=all record to each partition of a topic per round,
// through a client of the given nodes, and keeps what was acknowledged to read back.
type bridgeWriter struct {
	t          *testing.T
	c          *Cluster
	topic      string
	partitions int32
	cl         *kgo.Client
	acked      map[int32][]string
	maybe      map[int32]map[string]bool // written without an acknowledgement: may be in the log or not
	// mustHold are records acknowledged out of the writer's order (by another client):
	// each must be in the log, where is not checked; each is in maybe too.
	mustHold map[int32][]string
}

func newBridgeWriter(t *testing.T, c *Cluster, topic string, partitions int32, nodes ...int) *bridgeWriter {
	return newBridgeWriterWith(t, c, topic, partitions, nodes)
}

// newBridgeWriterWith is newBridgeWriter with more client options.
func newBridgeWriterWith(t *testing.T, c *Cluster, topic string, partitions int32, nodes []int, opts ...kgo.Opt) *bridgeWriter {
	cl := bridgeClient(t, c, nodes, opts...)
	return &bridgeWriter{t: t, c: c, topic: topic, partitions: partitions, cl: cl, acked: map[int32][]string{}, maybe: map[int32]map[string]bool{}, mustHold: map[int32][]string{}}
}

// write produces one record named for round to every partition, each acknowledged
// before the next.
func (w *bridgeWriter) write(round string) {
	w.t.Helper()
	w.produceRound(round, 60*time.Second, func(p int32, err error) {
		w.t.Fatalf("%s: produce to partition %d: %v", round, p, err)
	})
}

// produceRound produces one record named for round to every partition, each given
// timeout to be acknowledged before the next is sent; an acknowledged one joins acked,
// and failed is called for the others.
func (w *bridgeWriter) produceRound(round string, timeout time.Duration, failed func(p int32, err error)) {
	w.t.Helper()
	for p := range w.partitions {
		v := fmt.Sprintf("%s-%d", round, p)
		ctx, cancel := context.WithTimeout(testContext(w.t), timeout)
		err := w.cl.ProduceSync(ctx, &kgo.Record{Topic: w.topic, Partition: p, Value: []byte(v)}).FirstErr()
		cancel()
		if err != nil {
			w.maybe[p] = addMaybe(w.maybe[p], v) // it may have landed all the same
			failed(p, err)
			continue
		}
		w.acked[p] = append(w.acked[p], v)
	}
}

// bridgeClient is a bridgeWriter's client: of nodes, writing to the partition each
// record names, retrying for up to 45 s.
func bridgeClient(t *testing.T, c *Cluster, nodes []int, opts ...kgo.Opt) *kgo.Client {
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, c.Addr(n))
	}
	return newClient(t, addrs, append([]kgo.Opt{kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordRetries(1000), kgo.RecordDeliveryTimeout(45 * time.Second)}, opts...)...)
}

// tryWrite produces one record named for round to every partition, each given timeout
// to be acknowledged before the next is sent, and returns the partitions that
// acknowledged theirs. A record that failed or timed out may still be in the log.
func (w *bridgeWriter) tryWrite(round string, timeout time.Duration) (acked []int32) {
	w.t.Helper()
	failed := map[int32]bool{}
	w.produceRound(round, timeout, func(p int32, _ error) { failed[p] = true })
	for p := range w.partitions {
		if !failed[p] {
			acked = append(acked, p)
		}
	}
	return acked
}

// readBack reads the topic from its start and checks that every partition holds
// exactly what was acknowledged, in order, besides records written without an
// acknowledgement (tryWrite), each at most once.
func (w *bridgeWriter) readBack() {
	w.t.Helper()
	reader := w.c.Client(w.t, kgo.ConsumeTopics(w.topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[int32][]string{}
	want := 0
	for _, vs := range w.acked {
		want += len(vs)
	}
	ctx, cancel := context.WithTimeout(testContext(w.t), 60*time.Second)
	defer cancel()
	for n := 0; n < want; {
		fs := reader.PollFetches(ctx)
		if ctx.Err() != nil {
			w.t.Fatalf("read %d of %d acknowledged records before the deadline: %v", n, want, got)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], string(r.Value))
			if !w.maybe[r.Partition][string(r.Value)] {
				n++
			}
		})
	}
	for p := range w.partitions {
		seen := map[string]bool{}
		var sure []string
		for _, v := range got[p] {
			if seen[v] {
				w.t.Errorf("partition %d holds %s twice: %v", p, v, got[p])
			}
			seen[v] = true
			if !w.maybe[p][v] {
				sure = append(sure, v)
			}
		}
		if !slices.Equal(sure, w.acked[p]) {
			w.t.Errorf("partition %d read %v, acknowledged %v (and unacknowledged %v)", p, got[p], w.acked[p], slices.Sorted(maps.Keys(w.maybe[p])))
		}
		for _, v := range w.mustHold[p] {
			if !seen[v] {
				w.t.Errorf("partition %d lost %s, acknowledged to another client: read %v", p, v, got[p])
			}
		}
	}
}

// addMaybe returns set with v added, making it when nil.
func addMaybe(set map[string]bool, v string) map[string]bool {
	if set == nil {
		set = map[string]bool{}
	}
	set[v] = true
	return set
}
