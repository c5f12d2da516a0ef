package integration

import (
	"context"
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
		ctx, cancel := context.WithTimeout(testContext(t), 10*time.Second)
		start := time.Now()
		err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(recordValue("w", i))}).FirstErr()
		cancel()
		if err != nil {
			t.Fatalf("record %d, after %v: %v (a parked follower fetch was not woken?)", i, time.Since(start), err)
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
