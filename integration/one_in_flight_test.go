package integration

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestParkedFollowerFetchWokenByAppend: with replica.fetch.wait.max.ms at 30 s, every
// acks=all produce (RF 3, min.insync.replicas 2, one record in flight) is answered
// well within that: the followers' parked fetches are woken by the leader's append,
// and their next fetches, which carry the new log end offsets, release the produce
// at once. A fetch left to its long-poll timeout would hold each record for 30 s.
func TestParkedFollowerFetchWokenByAppend(t *testing.T) {
	c := StartCluster(t, 3, WithProperty("replica.fetch.wait.max.ms", "30000"), WithProperty("min.insync.replicas", "2"))
	const topic = "woken"
	c.CreateTopicRF(t, topic, 1, 3, nil)
	cl := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := range 20 {
		// Not a context deadline: kgo does not give up a record already sent.
		answered := make(chan error, 1)
		cl.Produce(testContext(t), &kgo.Record{Value: []byte(recordValue("w", i))}, func(_ *kgo.Record, err error) { answered <- err })
		select {
		case err := <-answered:
			if err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("record %d not answered in 10 s (a parked follower fetch was not woken by the append?)", i)
		}
	}
	// Every replica holds the 20 records: acks=all waited for the whole ISR.
	for i := range 3 {
		st, err := replicaOffsets(t, c, i, topic, 0)
		if err != nil || st.leo != 20 {
			t.Fatalf("node %d: log end offset %d, %v", i, st.leo, err)
		}
	}
}
