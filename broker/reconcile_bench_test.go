package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/metadata"
)

// BenchmarkReconcileChange measures the broker's reconciliation of one metadata entry
// that changes `changed` of the 10,000 partitions it hosts (a PartitionChange per
// partition, as a fence, unfence or leader move writes): the full pass over every
// partition against the delta pass over the changed ones (reconcileDelta), back to
// back in one run. Each op reconciles one new image.
//
//	go test ./broker/ -run '^$' -bench ReconcileChange -benchmem -benchtime 20x
func BenchmarkReconcileChange(b *testing.B) {
	const topics, perTopic = 2, 5000
	br := startTestBroker(b, "", map[string]string{"petrel.metrics.per.partition.enable": "false"})
	adm := newAdmin(b, br)
	for i := range topics {
		mustCreateTopic(b, adm, fmt.Sprintf("rc-%d", i), perTopic, nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	for len(br.partitions.all()) < topics*perTopic {
		if ctx.Err() != nil {
			b.Fatalf("%d of %d replicas open", len(br.partitions.all()), topics*perTopic)
		}
		time.Sleep(50 * time.Millisecond)
	}
	br.partitions.waitReconciled(ctx, br.Image().Offset)
	pm := br.partitions
	// The benchmark's images follow the broker's own; the live reconciler is idle
	// (nothing else changes the metadata) and only this goroutine reconciles them.
	im := br.Image()
	offset := im.Offset + 1_000_000
	next := func(changed int) *metadata.Image {
		var recs []metadata.Record
		for _, t := range im.TopicNames() {
			topic := im.Topics[t]
			for _, p := range topic.Partitions {
				if len(recs) == changed {
					break
				}
				recs = append(recs, metadata.PartitionChangeRecord{TopicID: topic.ID, PartitionID: p.ID, ISR: p.ISR})
			}
		}
		n, err := im.Apply(offset, recs)
		if err != nil {
			b.Fatal(err)
		}
		offset++
		return n
	}
	for _, changed := range []int{1, 10_000} {
		for _, mode := range []string{"full", "delta"} {
			b.Run(fmt.Sprintf("changed=%d/%s", changed, mode), func(b *testing.B) {
				b.ReportAllocs()
				for range b.N {
					b.StopTimer()
					prev := im
					im = next(changed)
					b.StartTimer()
					ok := false
					if mode == "full" {
						ok = pm.reconcile(im)
					} else {
						ok = pm.reconcileDelta(prev, im)
					}
					if !ok {
						b.Fatal("broker stopped")
					}
				}
			})
		}
	}
}
