package broker

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The cost of walking every record of a produced batch, per codec, on and off in the
// same run (docs/benchmarks.md):
//
//	go test -run XXX -bench 'RecordValidation|ProduceW1Validation' -count 3 ./broker/

// BenchmarkRecordValidation is the produce path's batch checks for one 16 KiB batch
// (16 records of 1 KiB, incompressible or compressible), off (header and CRC checks
// only, as before) and on (plus the record walk). Throughput counts the records'
// uncompressed bytes.
func BenchmarkRecordValidation(b *testing.B) {
	v := newRecordValidator(64 << 20)
	for _, c := range rvCodecs {
		for _, compressible := range []bool{false, true} {
			kind := "incompressible"
			if compressible {
				kind = "compressible"
			}
			section := rvGoodSection(16, 1024, compressible, 7)
			batch := rvBatch(rvCompress(b, section, c.codec), 16, c.codec)
			for _, on := range []bool{false, true} {
				name := fmt.Sprintf("%s/%s/off", c.name, kind)
				if on {
					name = fmt.Sprintf("%s/%s/on", c.name, kind)
				}
				b.Run(name, func(b *testing.B) {
					b.SetBytes(int64(len(section)))
					b.ReportAllocs()
					for b.Loop() {
						if code, err := validateProducedBatch(batch, 11, 1<<20); code != 0 {
							b.Fatal(err)
						}
						if on {
							if err := v.check(batch, false); err != nil {
								b.Fatal(err)
							}
						}
					}
				})
			}
		}
	}
}

// BenchmarkProduceW1Validation is W1 of docs/benchmarks.md in process: three brokers,
// a 6-partition topic with replication factor 3 and min.insync.replicas=2, a kgo
// producer with acks=all and 1 KiB records (64 different values, incompressible or
// compressible), per codec. One op is a block of 1,000 records produced and flushed;
// blocks alternate between the record walk off and on (off, on, on, off, ...), so
// that both modes see the same machine load, and the benchmark reports each mode's
// MB/s and their ratio.
func BenchmarkProduceW1Validation(b *testing.B) {
	const block = 1000
	c := startTestCluster(b, 3, 3, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.WithLogger(nil))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	defer skipRecordValidation.Store(false)
	for _, codec := range rvCodecs {
		for _, compressible := range []bool{false, true} {
			kind := "incompressible"
			if compressible {
				kind = "compressible"
			}
			topic := "w1-" + codec.name + "-" + kind
			two := "2"
			if _, err := adm.CreateTopic(context.Background(), 6, 3, map[string]*string{"min.insync.replicas": &two}, topic); err != nil {
				b.Fatal(err)
			}
			var values [][]byte
			for i := range 64 {
				values = append(values, rvValue(1024, compressible, i))
			}
			prod, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.WithLogger(nil), kgo.DefaultProduceTopic(topic),
				kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(codec.kgo))
			if err != nil {
				b.Fatal(err)
			}
			produceBlock := func(b *testing.B) {
				var failed atomic.Value
				for i := range block {
					prod.Produce(context.Background(), &kgo.Record{Value: values[i%len(values)]}, func(_ *kgo.Record, err error) {
						if err != nil {
							failed.Store(err)
						}
					})
				}
				if err := prod.Flush(context.Background()); err != nil {
					b.Fatal(err)
				}
				if err, _ := failed.Load().(error); err != nil {
					b.Fatal(err)
				}
			}
			b.Run(codec.name+"/"+kind, func(b *testing.B) {
				produceBlock(b) // warm up: metadata, connections, leaders
				var took [2]time.Duration
				var blocks [2]int
				b.ResetTimer()
				for i := range b.N {
					on := i%4 == 1 || i%4 == 2 // off, on, on, off, ...: no mode always goes first
					skipRecordValidation.Store(!on)
					start := time.Now()
					produceBlock(b)
					mode := 0
					if on {
						mode = 1
					}
					took[mode] += time.Since(start)
					blocks[mode]++
				}
				skipRecordValidation.Store(false)
				if blocks[0] == 0 || blocks[1] == 0 {
					return // too few blocks to compare (the framework's first round)
				}
				mbps := func(mode int) float64 {
					return float64(blocks[mode]*block*1024) / 1e6 / took[mode].Seconds()
				}
				b.ReportMetric(mbps(0), "off-MB/s")
				b.ReportMetric(mbps(1), "on-MB/s")
				b.ReportMetric(mbps(1)/mbps(0), "on/off")
			})
			prod.Close()
		}
	}
}
