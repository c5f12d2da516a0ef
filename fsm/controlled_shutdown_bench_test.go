package fsm

import (
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/petrel-broker/petrel/metadata"
)

// BenchmarkControlledShutdownEntry measures what the first entry of broker 2's
// controlled shutdown costs at scale (RF 3 on 3 brokers), the entry its stop waits for:
// planning, encoding, and the FSM decoding and applying it. "whole" is every change in
// one entry (fence, leaderships and ISR removals, as before); "leaderships first" is
// the entry metadata.ControlledShutdownRecords plans (fence and leaderships, with ISR
// removals up to 10,000 records).
//
//	go test ./fsm/ -run '^$' -bench ControlledShutdownEntry -benchmem -benchtime 3x
func BenchmarkControlledShutdownEntry(b *testing.B) {
	for _, n := range []int{20_000, 100_000} {
		for _, mode := range []string{"whole", "leaderships first"} {
			b.Run(fmt.Sprintf("partitions=%d/%s", n, mode), func(b *testing.B) {
				base := scaleImage(b, n)
				records := 0
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					b.StopTimer()
					f := New()
					f.image = base.Image()
					b.StartTimer()
					im := f.Image()
					var recs []metadata.Record
					if mode == "whole" {
						recs = metadata.FenceBrokerRecords(im, 2, nil)
					} else {
						recs = []metadata.Record{metadata.FenceBrokerRecord{BrokerID: 2, BrokerEpoch: im.Brokers[2].Epoch}}
						changes, _ := metadata.ControlledShutdownRecords(im, 2, metadata.MaxRecordsPerShutdownEntry-1)
						recs = append(recs, changes...)
					}
					data, err := metadata.EncodeRecords(recs...)
					if err != nil {
						b.Fatal(err)
					}
					if res := f.Apply(&raft.Log{Index: im.Offset + 1, Type: raft.LogCommand, Data: data}).(ApplyResult); res.Err != nil {
						b.Fatal(res.Err)
					}
					records = len(recs)
				}
				b.ReportMetric(float64(records), "records")
			})
		}
	}
}
