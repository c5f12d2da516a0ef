package integration

// An isolated partition leader (reliability.md T4, "a minority of one must never
// acknowledge acks=all writes"): the leader is cut from the other nodes while clients
// on its side still reach it, in rotation over the three nodes. Those clients' acks=all
// writes must not be acknowledged while the cut lasts, whatever the leader still
// believes; the majority moves its leaderships and keeps every partition taking writes
// from clients on its side; after the heal nothing acknowledged is lost.

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestIsolatedLeaderAcknowledgesNothing isolates each node in turn (Partition with
// PeersOnly). A client on the isolated node's side, which reaches that node only,
// writes acks=all records to the partition it leads; a client on the other side, of
// the two other nodes, writes to every partition until each has taken a write.
func TestIsolatedLeaderAcknowledgesNothing(t *testing.T) {
	t.Parallel()
	const topic, partitions = "isolated", 3
	c := StartCluster(t, 3, WithProperty("replica.lag.time.max.ms", "2000"), WithProperty("min.insync.replicas", "2"))
	createWithAssignment(t, c, topic, [][]int32{{0, 1, 2}, {1, 2, 0}, {2, 0, 1}}) // partition i led by node i
	waitFullISR(t, c, topic)
	everyone := newBridgeWriterWith(t, c, topic, partitions, []int{0, 1, 2}, kgo.ProduceRequestTimeout(2*time.Second))
	w := everyone
	w.write("before")

	for round, isolated := range []int{0, 1, 2} {
		led := int32(-1) // the partition the isolated node leads (preferred leaders return)
		testwait.For(t, 30*time.Second, func() error {
			for _, p := range c.WaitConverged().Topics[topic].Partitions {
				if p.Leader == int32(isolated) {
					led = p.ID
					return nil
				}
			}
			return fmt.Errorf("node-%d leads no partition yet", isolated)
		})
		isolatedAddr := c.Addr(isolated)
		var healed atomic.Bool
		// sideOf dials only what a client on one side of the cut reaches until the heal.
		sideOf := func(minority bool) kgo.Opt {
			return kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
				if (host == isolatedAddr) != minority && !healed.Load() {
					return nil, fmt.Errorf("%s is across the cut from this client", host)
				}
				var d net.Dialer
				return d.DialContext(ctx, network, host)
			})
		}
		minority := newClient(t, []string{isolatedAddr}, kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProduceRequestTimeout(2*time.Second), kgo.RecordDeliveryTimeout(45*time.Second), sideOf(true))
		warm := fmt.Sprintf("r%d-warm", round)
		if err := minority.ProduceSync(testContext(t), &kgo.Record{Topic: topic, Partition: led, Value: []byte(warm)}).FirstErr(); err != nil {
			t.Fatalf("round %d: the client of node-%d before the cut: %v", round, isolated, err)
		}
		w.acked[led] = append(w.acked[led], warm)

		c.Partition(isolated, PeersOnly)
		type ack struct {
			value string
			at    time.Time
			err   error
		}
		acks := make(chan ack, 3)
		for i := range 3 {
			v := fmt.Sprintf("r%d-minority%d", round, i)
			w.maybe[led] = addMaybe(w.maybe[led], v)
			minority.Produce(testContext(t), &kgo.Record{Topic: topic, Partition: led, Value: []byte(v)}, func(_ *kgo.Record, err error) {
				acks <- ack{v, time.Now(), err}
			})
		}
		// The majority fences the isolated node and moves its leadership: every
		// partition takes a write through a client of the other two nodes.
		var majority []int
		for i := range 3 {
			if i != isolated {
				majority = append(majority, i)
			}
		}
		w.cl = bridgeClient(t, c, majority, kgo.ProduceRequestTimeout(2*time.Second), sideOf(false))
		flowed := map[int32]bool{}
		start := time.Now()
		for r := 0; len(flowed) < partitions; r++ {
			if time.Since(start) > 45*time.Second {
				t.Fatalf("round %d: after %v of node-%d's isolation only partitions %v took a write", round, time.Since(start).Round(time.Second), isolated, flowed)
			}
			for _, p := range w.tryWrite(fmt.Sprintf("r%d-majority%d", round, r), 5*time.Second) {
				flowed[p] = true
			}
		}
		healedAt := time.Now()
		c.Heal()
		healed.Store(true)
		w.cl = everyone.cl

		// The minority client's records end: acknowledged after the heal, once kgo's
		// retries reach the partition's new leader, or failed; none before the heal.
		ctx, cancel := context.WithTimeout(testContext(t), 50*time.Second)
		for range 3 {
			select {
			case a := <-acks:
				if a.err == nil && a.at.Before(healedAt) {
					t.Errorf("round %d: node-%d, cut from its peers, acknowledged %s at acks=all %v before the heal", round, isolated, a.value, healedAt.Sub(a.at))
				}
				if a.err == nil {
					w.mustHold[led] = append(w.mustHold[led], a.value)
				}
			case <-ctx.Done():
				t.Fatalf("round %d: the isolated node's client's records did not end 50 s after the heal", round)
			}
		}
		cancel()
		minority.Close()
		waitFullISR(t, c, topic)
		w.write(fmt.Sprintf("r%d-healed", round))
	}
	w.readBack()
}
