package broker

import (
	"context"
	"fmt"
	"github.com/petrel-broker/petrel/compress"
	"github.com/petrel-broker/petrel/segment"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The cost of recompressing produced batches to a topic's compression.type
// (docs/benchmarks.md):
//
//	go test -run XXX -bench 'Recompress$' -benchtime 20000x -count 5 ./broker/
//	go test -run XXX -bench ProduceRecompression -benchtime 200x -count 5 ./broker/

// BenchmarkRecompress is the produce path's record handling of one 16 KiB batch (16
// records of 1 KiB of random bytes) sent with snappy or uncompressed: the record walk
// alone (compression.type=producer) and the walk with the rewrite to each codec at its
// default level. Throughput counts the records' uncompressed bytes.
func BenchmarkRecompress(b *testing.B) {
	v := newRecordValidator(64 << 20)
	section := rvGoodSection(16, 1024, false, 7)
	for _, src := range []int8{0, 2} {
		batch := rvBatch(rvCompress(b, section, src), 16, src)
		for _, target := range []string{"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"} {
			tc := segment.Compression{Codec: segment.CompressionCodecs[target], Opts: compress.DefaultOptions}
			if tc.Codec == src {
				continue
			}
			b.Run(fmt.Sprintf("%s-to-%s", rvCodecs[src].name, target), func(b *testing.B) {
				b.SetBytes(int64(len(section)))
				b.ReportAllocs()
				for b.Loop() {
					if !tc.Rewrites(src) {
						if err := v.check(batch, false); err != nil {
							b.Fatal(err)
						}
						continue
					}
					_, release, err := v.Recompress(batch, false, tc, 1<<20)
					if err != nil {
						b.Fatal(err)
					}
					release()
				}
			})
		}
	}
}

// BenchmarkProduceRecompression is produce throughput on one broker (in process,
// flush.messages=1 as by default) into a topic with compression.type=producer and into
// one with each other compression.type: a kgo producer with acks=all, snappy batches
// (kgo's default codec) and 1 KiB records of random bytes (8,192 different values, so
// no batch repeats one). compression.type=snappy rewrites nothing (the batches are
// snappy already): it is the control, the two topics' difference without any rewrite.
// One op is a block of 1,000 records produced and flushed; blocks alternate between the
// two topics (keep, other, other, keep, ...), so that both see the same machine load,
// and the benchmark reports each one's MB/s and their ratio.
func BenchmarkProduceRecompression(b *testing.B) {
	const block = 1000
	br := startTestBroker(b, "", nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addr().String()), kgo.WithLogger(nil))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	// Distinct values, more than a block holds: no batch repeats one (64 values
	// repeating made kgo's snappy batches 18 % of their size).
	values := make([][]byte, 8192)
	for i := range values {
		values[i] = rvValue(1024, false, i)
	}
	next := 0
	newProducer := func(topic string) *kgo.Client {
		p, err := kgo.NewClient(kgo.SeedBrokers(br.Addr().String()), kgo.WithLogger(nil), kgo.DefaultProduceTopic(topic),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.SnappyCompression()))
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	produceBlock := func(b *testing.B, prod *kgo.Client) {
		var failed atomic.Value
		for range block {
			next = (next + 1) % len(values)
			prod.Produce(context.Background(), &kgo.Record{Value: values[next]}, func(_ *kgo.Record, err error) {
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
	for _, target := range []string{"uncompressed", "gzip", "lz4", "zstd", "snappy"} {
		// A fresh pair of topics and producers for each: neither side is warmer.
		topic := "to-" + target
		if _, err := adm.CreateTopic(context.Background(), 1, 1, map[string]*string{"compression.type": kmsg.StringPtr(target)}, topic); err != nil {
			b.Fatal(err)
		}
		if _, err := adm.CreateTopic(context.Background(), 1, 1, nil, "keep-"+target); err != nil {
			b.Fatal(err)
		}
		prod, keep := newProducer(topic), newProducer("keep-"+target)
		b.Run("snappy-to-"+target, func(b *testing.B) {
			produceBlock(b, keep) // warm up: metadata, connections, leaders
			produceBlock(b, prod)
			var took [2]time.Duration
			var blocks [2]int
			b.ResetTimer()
			for i := range b.N {
				mode := 0
				if i%4 == 1 || i%4 == 2 { // keep, recompress, recompress, keep, ...
					mode = 1
				}
				start := time.Now()
				produceBlock(b, [2]*kgo.Client{keep, prod}[mode])
				took[mode] += time.Since(start)
				blocks[mode]++
			}
			if blocks[0] == 0 || blocks[1] == 0 {
				return // too few blocks to compare (the framework's first round)
			}
			mbps := func(mode int) float64 {
				return float64(blocks[mode]*block*1024) / 1e6 / took[mode].Seconds()
			}
			b.ReportMetric(mbps(0), "keep-MB/s")
			b.ReportMetric(mbps(1), "recompress-MB/s")
			b.ReportMetric(mbps(1)/mbps(0), "recompress/keep")
		})
		prod.Close()
		keep.Close()
	}
}
