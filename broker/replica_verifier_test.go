package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestReplicaVerifier_ComparesNewDataFirst: after a pass, the verifier remembers where
// each partition's comparisons ended; data committed later is compared from there (the
// catch-up that starts each pass and interrupts a long rescan), not after a rescan from
// offset 0.
func TestReplicaVerifier_ComparesNewDataFirst(t *testing.T) {
	c := startTestCluster(t, 2, 2, map[string]string{"petrel.replica.verification.enable": "false"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.DefaultProduceTopic("fresh"), kgo.WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 2, nil, "fresh"); err != nil {
		t.Fatal(err)
	}
	produce := func(n int) {
		for i := range n {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	var follower *Broker
	var lp *localPartition
	waitHW := func(hw int64) {
		testwait.ForWhat(t, 30*time.Second, fmt.Sprintf("a follower at HW %d", hw), func() error {
			for _, b := range c.brokers {
				if p := b.partitions.get("fresh", 0); p != nil {
					if _, ok := p.FollowerPosition(); ok && p.State().HighWatermark == hw {
						follower, lp = b, p
						return nil
					}
				}
			}
			return fmt.Errorf("no follower at HW %d", hw)
		})
	}
	produce(10)
	waitHW(10)
	v := newReplicaVerifier(follower)
	v.interval = time.Hour
	tp := segment.TopicPartition{Topic: "fresh", Partition: 0}
	v.pass(ctx)
	passBytes := verifiedBytes(t, follower)
	if e := v.verified[tp]; e.offset != 10 || e.epoch != lp.State().LeaderEpoch {
		t.Fatalf("after a pass: verified %+v, want offset 10 in epoch %d", e, lp.State().LeaderEpoch)
	}
	produce(5)
	waitHW(15)
	pos, _ := lp.FollowerPosition()
	// The catch-up alone, as a pass starts it (or a long rescan every interval).
	if !v.catchUp(ctx, map[int32][]*localPartition{pos.Leader: {lp}}) {
		t.Fatal("catch-up stopped")
	}
	if e := v.verified[tp]; e.offset != 15 {
		t.Fatalf("after the catch-up: verified %+v, want offset 15", e)
	}
	// It read the 5 new records only: a rescan from offset 0 would read 15, more than
	// the pass's 10 (the verified offset alone would end at 15 either way).
	if caught := verifiedBytes(t, follower) - passBytes; caught <= 0 || caught >= passBytes {
		t.Fatalf("the catch-up read %v bytes against the pass's %v: want fewer, from offset 10", caught, passBytes)
	}
}

// verifiedBytes is b's petrel_replica_verification_bytes_total.
func verifiedBytes(t *testing.T, b *Broker) float64 {
	t.Helper()
	fams, err := b.metrics.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == "petrel_replica_verification_bytes_total" {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("no petrel_replica_verification_bytes_total")
	return 0
}
