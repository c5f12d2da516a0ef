package broker

import (
	"context"
	"fmt"
	"sync"
	"testing"

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
							if err := v.check(batch); err != nil {
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
// producer with acks=all and 1 KiB records, per codec, with the record walk off and on
// alternately. Each op is one record.
func BenchmarkProduceW1Validation(b *testing.B) {
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
			value := rvValue(1024, compressible, 3)
			prod, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.WithLogger(nil), kgo.DefaultProduceTopic(topic),
				kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(codec.kgo))
			if err != nil {
				b.Fatal(err)
			}
			for _, on := range []bool{false, true} {
				name := codec.name + "/" + kind + "/off"
				if on {
					name = codec.name + "/" + kind + "/on"
				}
				b.Run(name, func(b *testing.B) {
					skipRecordValidation.Store(!on)
					b.SetBytes(1024)
					var wg sync.WaitGroup
					var failed error
					var mu sync.Mutex
					for b.Loop() {
						wg.Add(1)
						prod.Produce(context.Background(), &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
							if err != nil {
								mu.Lock()
								failed = err
								mu.Unlock()
							}
							wg.Done()
						})
					}
					wg.Wait()
					if failed != nil {
						b.Fatal(failed)
					}
				})
			}
			prod.Close()
		}
	}
}
