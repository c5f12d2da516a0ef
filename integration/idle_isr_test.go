package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestIdleFollowersStayInSyncAfterAQuietSpell: three brokers, a topic of many
// partitions RF 3 with min.insync.replicas=3, so an acks=all produce needs every
// follower in the ISR. After a quiet spell of three times replica.lag.time.max.ms,
// during which the follower fetch sessions read nothing (only what changes is read on
// either side), every partition takes an acks=all produce at once, and no leader
// shrinks an ISR: an idle follower's caught-up time stayed fresh (Kafka: a fetch at
// the log end marks the follower caught up for every partition of its session).
func TestIdleFollowersStayInSyncAfterAQuietSpell(t *testing.T) {
	t.Parallel()
	const lagMax = 1500 * time.Millisecond
	const partitions = 60
	c := StartCluster(t, 3,
		WithProperty("min.insync.replicas", "3"),
		WithProperty("replica.lag.time.max.ms", fmt.Sprint(lagMax.Milliseconds())),
	)
	c.CreateTopicRF(t, "idle", partitions, 3, nil)
	cl := c.Client(t, kgo.DefaultProduceTopic("idle"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(0), kgo.RecordDeliveryTimeout(20*time.Second))
	produceAll := func(round int) error {
		ctx, cancel := context.WithTimeout(testContext(t), 30*time.Second)
		defer cancel()
		var rs []*kgo.Record
		for p := range int32(partitions) {
			rs = append(rs, &kgo.Record{Partition: p, Value: []byte(fmt.Sprintf("round-%d-%d", round, p))})
		}
		return cl.ProduceSync(ctx, rs...).FirstErr()
	}
	// Every ISR full: acks=all with min.insync.replicas=3 succeeds on every partition.
	testwait.For(t, 60*time.Second, func() error { return produceAll(0) })
	shrinks := func() []string {
		var out []string
		for i := range 3 {
			for _, line := range c.logLines(i) {
				if strings.Contains(line, "shrinking the ISR") {
					out = append(out, line)
				}
			}
		}
		return out
	}
	before := len(shrinks())
	// The quiet spell: nothing is produced; the follower sessions idle.
	<-time.After(3 * lagMax)
	start := time.Now()
	if err := produceAll(1); err != nil {
		t.Fatalf("acks=all after the quiet spell: %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Logf("acks=all after the quiet spell took %v (a loaded host?)", took)
	}
	// A shrink would be asked at the leader's next ISR check (every lagMax/2).
	<-time.After(lagMax)
	if got := shrinks(); len(got) > before {
		t.Fatalf("ISR shrunk after the quiet spell:\n%s", strings.Join(got[before:], "\n"))
	}
	if err := produceAll(2); err != nil {
		t.Fatalf("acks=all after the check: %v", err)
	}
}
