package integration

// The whole cluster stopped at once (P26 item 4), as a service manager stops every
// host: no broker is left to take the stopping brokers' leaderships, so the controller
// lets each stop without moving them (controller/shutdown.go), and nothing acknowledged
// may be lost on the way down or back up.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCluster_WholeClusterStopAndStart stops every node of a 3-node cluster at once
// while a producer writes with acks=all, and starts them again: the stop logs nothing
// at WARN or ERROR, the controller let at least the last broker to ask stop without
// moving leaderships, and after the start every partition is led with a full ISR and
// every acknowledged record is read back.
func TestCluster_WholeClusterStopAndStart(t *testing.T) {
	t.Parallel()
	const topic = "whole-stop"
	c := startWithTopic(t, topic)

	var mu sync.Mutex
	acked := map[string]bool{} // guarded by mu
	produced := make(chan struct{})
	pctx, stopProducing := context.WithCancel(testContext(t))
	// Its own client, closed after the stop: the records it still buffers then fail
	// (with every broker gone they would be retried for ever).
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(produced)
		for n := 0; pctx.Err() == nil; n += 10 {
			var recs []*kgo.Record
			for i := n; i < n+10; i++ {
				recs = append(recs, &kgo.Record{Key: []byte(recordKey(i)), Value: []byte(fmt.Sprintf("w-%d", i))})
			}
			for _, r := range cl.ProduceSync(pctx, recs...) {
				if r.Err == nil {
					mu.Lock()
					acked[string(r.Record.Value)] = true
					mu.Unlock()
				}
			}
		}
	}()
	testwait.ForWhat(t, 30*time.Second, "records acknowledged before the stop", func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(acked) < 100 {
			return fmt.Errorf("%d acknowledged", len(acked))
		}
		return nil
	})

	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			errs[i] = c.Node(i).Shutdown(ctx)
		}()
	}
	wg.Wait()
	for i := range 3 {
		c.nodes[i].running = false
		if errs[i] != nil {
			t.Errorf("node-%d: shutdown: %v", i, errs[i])
		}
	}
	stopProducing()
	cl.Close()
	<-produced
	checkNoAlerts(t, c, "the whole cluster stopped at once")
	final := c.nodes[0].broker.Image() // the image the cluster stopped with: the longest log
	for i := 1; i < 3; i++ {
		if im := c.nodes[i].broker.Image(); im.Offset > final.Offset {
			final = im
		}
	}
	kept := 0
	for i := range 3 {
		for _, line := range c.logLines(i) {
			if strings.Contains(line, "every other broker is stopping too; leaderships stay") {
				kept++
				break
			}
		}
	}
	if kept == 0 {
		t.Error("no broker was let stop without moving its leaderships while every broker was stopping")
	}

	c.Restart(0, 1, 2)
	waitFullISR(t, c, topic)
	checkResumed(t, c, final, topic)
	readBack(t, c, topic, acked)
	checkNoAlerts(t, c, "the whole cluster started at once")
}

// checkResumed checks that the brokers that came back after their clean shutdown by
// resuming (registered unfenced at once: "resumes its roles unfenced") lead what they
// led when the cluster stopped (final), in the same leader epochs, and that at least
// one did: the last broker to ask for its controlled shutdown writes nothing, so it is
// never fenced on the way down. Another broker may be: its controlled shutdown's entry,
// planned before the others asked, can commit after the image final was taken from, be
// applied at the start, and make that broker register the fencing way (which moves only
// its own leaderships).
func checkResumed(t *testing.T, c *Cluster, final *metadata.Image, topic string) {
	t.Helper()
	resumed := map[int32]bool{}
	for i := range 3 {
		for _, line := range c.logLines(i) {
			if !strings.Contains(line, "resumes its roles unfenced") {
				continue
			}
			for id := range final.Brokers {
				if strings.Contains(line, fmt.Sprintf("broker=%d ", id)) {
					resumed[id] = true
				}
			}
		}
	}
	if len(resumed) == 0 {
		t.Fatal("no broker resumed its roles after the clean whole-cluster stop")
	}
	now := c.nodes[0].broker.Image()
	for id := range resumed {
		for i, p := range final.Topic(topic).Partitions {
			q := now.Topic(topic).Partitions[i]
			if p.Leader == id && (q.Leader != id || q.LeaderEpoch != p.LeaderEpoch) {
				t.Errorf("%s-%d: led by %d in leader epoch %d at the stop, by %d in %d after %d resumed",
					topic, i, id, p.LeaderEpoch, q.Leader, q.LeaderEpoch, id)
			}
		}
	}
}

// startWithTopic starts 3 nodes with topic (6 partitions, RF 3) fully in sync, having
// logged nothing at WARN or ERROR.
func startWithTopic(t *testing.T, topic string) *Cluster {
	t.Helper()
	c := StartCluster(t, 3)
	c.CreateTopicRF(t, topic, 6, 3, nil)
	waitFullISR(t, c, topic)
	checkNoAlerts(t, c, "a clean bootstrap")
	return c
}

// readBack reads topic from the start until every value of acked has been seen, or
// fails t.
func readBack(t *testing.T, c *Cluster, topic string, acked map[string]bool) {
	t.Helper()
	cons := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(testContext(t), 60*time.Second)
	defer cancel()
	seen := map[string]bool{}
	missing := func() int {
		n := 0
		for v := range acked {
			if !seen[v] {
				n++
			}
		}
		return n
	}
	for missing() > 0 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%d of %d acknowledged records not read back after the restart", missing(), len(acked))
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
}

// TestCluster_StopOneAfterAnother stops the nodes of a 3-node cluster one after
// another and starts them again. The first stop, in a healthy cluster, still moves the
// stopping broker's leaderships before it exits; the last broker, whose Raft quorum
// went with the others, lets its leaderships stay at once instead of waiting for a
// controller; nothing is logged at WARN or ERROR and every acknowledged record is
// read back after the start.
func TestCluster_StopOneAfterAnother(t *testing.T) {
	t.Parallel()
	const topic = "one-by-one"
	c := startWithTopic(t, topic)
	acked := map[string]bool{}
	cl := c.Client(t, kgo.DefaultProduceTopic(topic))
	var recs []*kgo.Record
	for i := range 200 {
		recs = append(recs, &kgo.Record{Key: []byte(recordKey(i)), Value: []byte(fmt.Sprintf("s-%d", i))})
	}
	if err := cl.ProduceSync(testContext(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		acked[string(r.Value)] = true
	}

	if c.Node(0).Image().LeaderCount(0) == 0 {
		t.Fatal("node-0 leads nothing before its stop: the test would prove nothing")
	}
	c.Stop(0)
	testwait.ForWhat(t, convergeTimeout, "node-0's leaderships moved", func() error {
		if n := c.Node(1).Image().LeaderCount(0); n > 0 {
			return fmt.Errorf("node-0 stopped in a healthy cluster still leads %d partitions in node-1's image", n)
		}
		return nil
	})
	for _, line := range c.logLines(0) {
		if strings.Contains(line, "leaderships stay") {
			t.Fatalf("node-0 stopped in a healthy cluster without moving its leaderships: %s", line)
		}
	}
	c.Stop(1)
	c.Stop(2)
	checkNoAlerts(t, c, "the nodes stopped one after another")
	last := false
	for _, line := range c.logLines(2) {
		if strings.Contains(line, "leaderships stay") {
			last = true
		}
	}
	if !last {
		t.Error("the last broker did not let its leaderships stay")
	}
	c.Restart(0, 1, 2)
	waitFullISR(t, c, topic)
	readBack(t, c, topic, acked)
	checkNoAlerts(t, c, "the cluster started again")
}

// TestCluster_WholeClusterStartWithALateNode stops the nodes of a 3-node cluster one
// after another, so that the last (node-2) stops unfenced with its leaderships, then
// starts the other two first: node-2, not started yet, is fenced (on its followers'
// refused fetches, or at its session's end; the partitions whose ISR it was alone in
// wait for it). That is a routine start, not a failure: nothing is logged at WARN or
// ERROR, the fence is logged at INFO as a broker not started yet, and once node-2
// starts every ISR is full again.
func TestCluster_WholeClusterStartWithALateNode(t *testing.T) {
	t.Parallel()
	const topic = "late-node"
	c := startWithTopic(t, topic)
	for i := range 3 {
		c.Stop(i)
	}
	if b := c.Node(2).Image().Brokers[2]; b == nil || b.Fenced || c.Node(2).Image().LeaderCount(2) == 0 {
		t.Fatalf("node-2 stopped fenced or leading nothing (%+v): the test would prove nothing", b)
	}
	checkNoAlerts(t, c, "the nodes stopped one after another")

	c.Restart(0, 1)
	testwait.ForWhat(t, convergeTimeout, "broker 2 fenced", func() error {
		if b := c.Node(0).Image().Brokers[2]; b == nil || !b.Fenced {
			return fmt.Errorf("broker 2 in node-0's image: %+v", b)
		}
		return nil
	})
	c.Restart(2)
	waitFullISR(t, c, topic)
	checkNoAlerts(t, c, "a whole-cluster start with a node started late")
	noted := false
	for i := range 2 {
		for _, line := range c.logLines(i) {
			noted = noted || strings.Contains(line, "broker not started yet") && strings.Contains(line, "broker=2 ")
		}
	}
	if !noted {
		t.Error("broker 2's fence was not logged as a broker not started yet")
	}
}
