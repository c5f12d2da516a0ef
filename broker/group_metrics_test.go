package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/metrics"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The metrics see the groups this broker coordinates — a classic group of a kgo
// consumer and a consumer group (KIP-848) — with their types, states and members, and
// count their rebalances: the classic group's completed one, the consumer group's
// epoch bump, each timed.
func TestGroupMetrics(t *testing.T) {
	b := startTestBroker(t, "", map[string]string{"group.initial.rebalance.delay.ms": "0"})
	adm := newAdmin(t, b)
	ctx := testContext(t)
	mustCreateTopic(t, adm, "t", 2, nil)
	produced := newClient(t, b)
	if err := produced.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	consumeOne(t, newClient(t, b, kgo.ConsumerGroup("classic"), kgo.ConsumeTopics("t")))
	joinConsumerGroupDirect(t, b, "cg", "m1", "t")

	testwait.ForWhat(t, 30*time.Second, "both groups Stable in the metrics", func() error {
		groups := map[string]metrics.GroupState{}
		for _, g := range b.metricsSnapshot().Groups {
			groups[g.Group] = g
		}
		if g := groups["classic"]; g.Type != "classic" || g.State != "Stable" || g.Members != 1 {
			return fmt.Errorf("classic group %+v", g)
		}
		if g := groups["cg"]; g.Type != "consumer" || g.State != "Stable" || g.Members != 1 {
			return fmt.Errorf("consumer group %+v", g)
		}
		return nil
	})
	fams, err := b.metrics.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			switch {
			case m.Counter != nil:
				got[f.GetName()] += m.Counter.GetValue()
			case m.Histogram != nil:
				got[f.GetName()] += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	if got["kafka_server_group_coordinator_metrics_consumer_group_rebalance_total"] < 1 ||
		got["kafka_server_group_coordinator_metrics_group_completed_rebalance_total"] < 1 || got["petrel_group_rebalance_time_ms"] < 2 {
		t.Fatalf("rebalance metrics: %v", got)
	}
}

// consumeOne polls cl until it consumed a record: a group member has then joined.
func consumeOne(t *testing.T, cl *kgo.Client) {
	t.Helper()
	for got := 0; got < 1; {
		fs := cl.PollFetches(testContext(t))
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
}
