package integration

// One-way cuts (reliability.md T4): a blackhole route from one node to another. What
// the first writes to the second is held back, and dials between them hang, while the
// second's traffic to the first flows; neither side sees a connection closed or
// refused. Request and answer cross the cut in opposite directions, so every exchange
// between the two stalls whichever way the cut runs. Each test cuts one direction,
// writes through it until every partition has taken a write, checks who was fenced,
// heals, and checks that every partition takes writes again and that no acknowledged
// record was lost.

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestOneWayCutFromTheControllerFencesTheOtherEnd: the controller's bytes to a broker
// are held, so the broker's heartbeats go unanswered, its connection times out and its
// next dial hangs; the controller fences it, its leaderships move, and every partition
// keeps taking writes.
func TestOneWayCutFromTheControllerFencesTheOtherEnd(t *testing.T) {
	t.Parallel()
	oneWayCut(t, func(c *Cluster) (int, int) { a := c.Controller(); return a, (a + 1) % 3 }, func(im *metadata.Image, _, to int) error {
		return fencedAlone(im, to)
	})
}

// TestOneWayCutToTheControllerFencesTheOtherEnd: a broker's bytes to the controller are
// held, so its heartbeats never arrive; the controller fences it, and every partition
// keeps taking writes.
func TestOneWayCutToTheControllerFencesTheOtherEnd(t *testing.T) {
	t.Parallel()
	oneWayCut(t, func(c *Cluster) (int, int) { a := c.Controller(); return (a + 1) % 3, a }, func(im *metadata.Image, from, _ int) error {
		return fencedAlone(im, from)
	})
}

// TestOneWayCutBetweenTwoBrokersShrinksTheirISRs: between the two nodes that are not the
// controller, both reach the controller, so nobody is fenced; neither can fetch from
// the other, and each leader drops the other from its ISR.
func TestOneWayCutBetweenTwoBrokersShrinksTheirISRs(t *testing.T) {
	t.Parallel()
	oneWayCut(t, func(c *Cluster) (int, int) { a := c.Controller(); return (a + 1) % 3, (a + 2) % 3 }, func(im *metadata.Image, from, to int) error {
		for id, br := range im.Brokers {
			if br.Fenced {
				return fmt.Errorf("node-%d fenced, though every node still reaches the controller", id)
			}
		}
		for _, p := range im.Topics[oneWayTopic].Partitions {
			if p.Leader != p.ID {
				return fmt.Errorf("partition %d led by node-%d, though nobody was fenced", p.ID, p.Leader)
			}
			if (p.Leader == int32(from) && slices.Contains(p.ISR, int32(to))) || (p.Leader == int32(to) && slices.Contains(p.ISR, int32(from))) {
				return fmt.Errorf("partition %d: leader %d, ISR %v holds the node that cannot fetch from it", p.ID, p.Leader, p.ISR)
			}
		}
		return nil
	})
}

const oneWayTopic = "oneway"

// fencedAlone reports whether the image has node fenced, leading nothing and out of
// every ISR, and every other node unfenced (nil), or what differs.
func fencedAlone(im *metadata.Image, fenced int) error {
	for id, br := range im.Brokers {
		if br.Fenced != (id == int32(fenced)) {
			return fmt.Errorf("node-%d fenced: %v; want only node-%d fenced", id, br.Fenced, fenced)
		}
	}
	for _, p := range im.Topics[oneWayTopic].Partitions {
		if p.Leader == int32(fenced) || slices.Contains(p.ISR, int32(fenced)) {
			return fmt.Errorf("partition %d: leader %d, ISR %v with node-%d fenced", p.ID, p.Leader, p.ISR, fenced)
		}
	}
	return nil
}

// oneWayCut runs one test: a three-node cluster with one partition led by each node
// (RF 3, min.insync.replicas=2), the one-way cut that pick names, rounds of acks=all
// writes to every partition through a client of all three nodes until each partition
// has taken one, check on the controller's image (polled: the writes may have passed
// before all of the controller's decisions landed), one more round that must succeed,
// then the heal.
func oneWayCut(t *testing.T, pick func(c *Cluster) (from, to int), check func(im *metadata.Image, from, to int) error) {
	c := StartCluster(t, 3, WithProperty("replica.lag.time.max.ms", "2000"), WithProperty("min.insync.replicas", "2"))
	createWithAssignment(t, c, oneWayTopic, [][]int32{{0, 1, 2}, {1, 2, 0}, {2, 0, 1}}) // partition i led by node i
	waitFullISR(t, c, oneWayTopic)
	// A leader cut from the controller may not learn that it lost its leadership, and
	// holds an acks=all write until the request's timeout: a short one sends the client
	// to the new leader sooner than kgo's default 10 s.
	w := newBridgeWriterWith(t, c, oneWayTopic, 3, []int{0, 1, 2}, kgo.ProduceRequestTimeout(2*time.Second))
	w.write("before")

	a := c.Controller()
	from, to := pick(c)
	c.CutOneWay(from, to)
	t.Cleanup(c.Heal)
	flowed := map[int32]bool{}
	start := time.Now()
	for round := 0; len(flowed) < 3; round++ {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("after %d rounds in %v of the cut, only partitions %v took a write", round, time.Since(start).Round(time.Second), flowed)
		}
		for _, p := range w.tryWrite(fmt.Sprintf("cut%d", round), 5*time.Second) {
			flowed[p] = true
		}
	}
	testwait.For(t, 15*time.Second, func() error { return check(c.Node(a).Image(), from, to) })
	w.write("cut")

	c.Heal()
	waitFullISR(t, c, oneWayTopic)
	w.write("healed")
	w.readBack()
}
