package fsm

import (
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/petrel-broker/petrel/metadata"
)

// BenchmarkFenceUnfence measures what the controller and every node pay for one broker
// fence and its unfence at scale (RF 3 on 3 brokers): planning the records
// (FenceBrokerRecords, UnfenceBrokerRecords), encoding them as one entry, and the FSM
// decoding and applying it. Each op is one fence plus one unfence of broker 2.
//
//	go test ./fsm/ -run '^$' -bench FenceUnfence -benchmem -benchtime 5x
func BenchmarkFenceUnfence(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			f := scaleImage(b, n)
			index := f.Image().Offset + 1
			apply := func(recs []metadata.Record) {
				data, err := metadata.EncodeRecords(recs...)
				if err != nil {
					b.Fatal(err)
				}
				if res := f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: data}).(ApplyResult); res.Err != nil {
					b.Fatal(res.Err)
				}
				index++
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				fence := metadata.FenceBrokerRecords(f.Image(), 2, nil)
				apply(fence)
				unfence := metadata.UnfenceBrokerRecords(f.Image(), 2, nil)
				apply(unfence)
			}
			b.ReportMetric(float64(n), "partitions")
		})
	}
}
