package integration

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/s3test"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkTieredCatchUp measures a catch-up consumer's read throughput from the object
// store against the same data on local disk, in one run (docs/bench/tiered.sh): 64 MiB
// of uncompressed 1 KiB records in 1 MiB segments to a tiered topic whose local log
// keeps only its active segment, and to a topic without remote storage; each
// sub-benchmark reads its topic from offset 0 to the end with a new franz-go consumer.
// Run with -benchtime=1x: "tiered" is then the cold read (chunk cache empty, read-ahead
// only), "tiered-cached" the same read again from the chunk cache.
func BenchmarkTieredCatchUp(b *testing.B) {
	const total, valueSize = 64 << 20, 1024
	srv := s3test.Start(b)
	c := StartCluster(b, 1, append(tieredProperties(srv), WithProperty("log.retention.check.interval.ms", "100"))...)
	yes, seg, local := "true", fmt.Sprint(1<<20), "1"
	c.CreateTopicRF(b, "tiered", 1, 1, map[string]*string{"remote.storage.enable": &yes, "segment.bytes": &seg, "local.retention.bytes": &local})
	c.CreateTopicRF(b, "local", 1, 1, map[string]*string{"segment.bytes": &seg})
	pcl := c.Client(b, kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchCompression(kgo.NoCompression()))
	value := bytes.Repeat([]byte("x"), valueSize)
	for _, topic := range []string{"tiered", "local"} {
		for i := 0; i < total/valueSize; i++ {
			pcl.Produce(context.Background(), &kgo.Record{Topic: topic, Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					b.Error(err)
				}
			})
		}
	}
	if err := pcl.Flush(testContext(b)); err != nil {
		b.Fatal(err)
	}
	end := listOffset(b, c, 0, "tiered", -1)
	testwait.ForWhat(b, 5*time.Minute, "90% of the tiered topic copied and deleted locally", func() error {
		if got := listOffset(b, c, 0, "tiered", -4); got < end*9/10 {
			return fmt.Errorf("local log starts at %d of %d", got, end)
		}
		return nil
	})
	b.Logf("tiered: local log starts at %d of %d", listOffset(b, c, 0, "tiered", -4), end)
	for _, name := range []string{"local", "tiered", "tiered-cached"} {
		topic := map[string]string{"local": "local", "tiered": "tiered", "tiered-cached": "tiered"}[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(total)
			for range b.N {
				cl := c.Client(b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}),
					kgo.FetchMaxBytes(16<<20), kgo.FetchMaxPartitionBytes(4<<20))
				ctx, cancel := context.WithTimeout(testContext(b), 5*time.Minute)
				n := int64(0)
				for n < end {
					fs := cl.PollFetches(ctx)
					if ctx.Err() != nil {
						b.Fatalf("read %d of %d records", n, end)
					}
					n += int64(fs.NumRecords())
				}
				cancel()
				cl.Close()
			}
		})
	}
}
