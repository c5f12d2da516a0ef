package broker

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKgoRoundTripEveryCodec produces keyed records with headers in every codec with
// kgo's defaults plus acks=all, then consumes them all back and checks each one.
func TestKgoRoundTripEveryCodec(t *testing.T) {
	b := startTestBroker(t, "", nil)
	adm := newAdmin(t, b)
	codecs := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	for name, codec := range codecs {
		t.Run(name, func(t *testing.T) {
			topic := "rt-" + name
			mustCreateTopic(t, adm, topic, 3, nil)
			prod := newClient(t, b, kgo.ProducerBatchCompression(codec), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic))
			const n = 600
			want := map[string][]byte{}
			for i := 0; i < n; i++ {
				value := bytes.Repeat([]byte(fmt.Sprintf("value-%d-", i)), 1+i%20)
				rec := &kgo.Record{Key: []byte(recordKey(i)), Value: value, Headers: []kgo.RecordHeader{{Key: "i", Value: []byte(fmt.Sprint(i))}}}
				want[recordKey(i)] = value
				prod.Produce(testContext(t), rec, func(r *kgo.Record, err error) {
					if err != nil {
						t.Errorf("produce: %v", err)
					}
				})
			}
			if err := prod.Flush(testContext(t)); err != nil {
				t.Fatal(err)
			}
			cons := newClient(t, b, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			got := 0
			perPartition := map[int32]int64{}
			for got < n {
				fs := cons.PollFetches(testContext(t))
				if err := fs.Err0(); err != nil {
					t.Fatal(err)
				}
				fs.EachRecord(func(r *kgo.Record) {
					w, ok := want[string(r.Key)]
					// Key "key-%05d" and header "i" carry the same record number.
					var i int
					fmt.Sscanf(string(r.Key), "key-%d", &i)
					if !ok || !bytes.Equal(w, r.Value) || len(r.Headers) != 1 || r.Headers[0].Key != "i" || string(r.Headers[0].Value) != fmt.Sprint(i) {
						t.Fatalf("unexpected record %s", r.Key)
					}
					if r.Offset != perPartition[r.Partition] {
						t.Fatalf("partition %d: offset %d, expected %d", r.Partition, r.Offset, perPartition[r.Partition])
					}
					perPartition[r.Partition]++
					delete(want, string(r.Key))
					got++
				})
			}
			if len(want) != 0 {
				t.Fatalf("%d records missing", len(want))
			}
		})
	}
}

// TestRestartKeepsTopicsAndRecords stops a broker gracefully and starts it again on the
// same data dir.
func TestRestartKeepsTopicsAndRecords(t *testing.T) {
	dir := t.TempDir()
	b := startTestBroker(t, dir, nil)
	mustCreateTopic(t, newAdmin(t, b), "keep", 2, nil)
	prod := newClient(t, b, kgo.DefaultProduceTopic("keep"))
	for i := 0; i < 100; i++ {
		if err := prod.ProduceSync(testContext(t), kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	prod.Close()
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	b2 := startTestBroker(t, dir, nil)
	if b2.Image().Topic("keep") == nil {
		t.Fatal("topic lost across restart")
	}
	cons := newClient(t, b2, kgo.ConsumeTopics("keep"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	for len(seen) < 100 {
		fs := cons.PollFetches(testContext(t))
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
}
