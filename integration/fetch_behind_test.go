package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetch_FallingBehindAnswersAtOnce: a Fetch with min_bytes above what one segment
// holds answers at once when the fetch offset lies in an older segment than the high
// watermark (Kafka's DelayedFetch), instead of waiting max_wait_ms and returning one
// segment's batch. A kafka-go Reader with a large MinBytes and MaxWait (as kafka-go's own
// integration tests set them) reads a topic of many small segments without crawling one
// segment per MaxWait: both are bounded by deadlines far below what waiting would take.
func TestFetch_FallingBehindAnswersAtOnce(t *testing.T) {
	c := StartCluster(t, 1)
	ctx := testContext(t)
	const topic, records = "behind", 200
	c.CreateTopic(t, topic, 1, map[string]*string{"segment.bytes": kmsg.StringPtr("1024")})
	cl := c.Client(t, kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for i := range records {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(recordKey(i)), Value: []byte(recordValue("v", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	// Raw Fetch v12 at the first offsets: min_bytes 100 KiB, max_wait_ms 60 s.
	for off := int64(0); off < 8; off++ {
		fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MinBytes, req.MaxWaitMillis, req.MaxBytes, req.SessionEpoch = 12, -1, 100<<10, 60_000, 1<<20, -1
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = topic
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = off, 1<<20, -1
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp, err := req.RequestWith(fctx, cl)
		cancel()
		if err != nil {
			t.Fatalf("fetch at %d waited for min_bytes although later segments hold data: %v", off, err)
		}
		if sp := resp.Topics[0].Partitions[0]; sp.ErrorCode != 0 || len(sp.RecordBatches) == 0 {
			t.Fatalf("fetch at %d: error %d, %d bytes", off, sp.ErrorCode, len(sp.RecordBatches))
		}
	}

	r := kafka.NewReader(kafka.ReaderConfig{Brokers: c.Addrs(), Topic: topic, Partition: 0, MinBytes: 100 << 10, MaxBytes: 1 << 20, MaxWait: 30 * time.Second})
	defer r.Close()
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for i := range records - 30 { // not the last ones: less than MinBytes in the active segment, Kafka waits there
		m, err := r.ReadMessage(rctx)
		if err != nil {
			t.Fatalf("kafka-go read %d of %d records: %v", i, records, err)
		}
		if m.Offset != int64(i) || string(m.Value) != recordValue("v", i) {
			t.Fatalf("record %d: %s", i, fmt.Sprint(m.Offset, string(m.Value)))
		}
	}
}
