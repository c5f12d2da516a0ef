package integration

// A topic's compression.type: the leader recompresses produced batches whose codec
// differs from the topic's (producer keeps them as sent). The producer is
// confluent-kafka-python (librdkafka) sending snappy to a gzip topic; the stored batches
// are read with raw Fetch requests and by confluent-kafka's consumer.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/petrel-broker/petrel/broker"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestConfluentPython_CompressionTypeRecompresses(t *testing.T) {
	s := confluentClient(t)
	t.Parallel()
	c := StartCluster(t, 1)
	topic := "confluent-gzip-topic"
	c.CreateTopic(t, topic, 1, map[string]*string{"compression.type": kmsg.StringPtr("gzip")})
	const n = 500
	if out := s.run(t, "codec", c.Addr(0), topic, fmt.Sprint(n), "confluent", "snappy"); strings.TrimSpace(out) != fmt.Sprintf("produced %d", n) {
		t.Fatalf("codec printed %q", out)
	}

	// Raw fetches: every stored batch is gzip, with a valid CRC, the producer's fields,
	// and the records as sent.
	hw, data, err := replicaLog(t, c, 0, topic, 0)
	if err != nil || hw != n {
		t.Fatalf("high watermark %d (%v), expected %d", hw, err, n)
	}
	next := int64(0)
	for b := data; len(b) > 0; {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b); err != nil {
			t.Fatalf("batch at %d: %v", next, err)
		}
		size := int(rb.Length) + 12
		if codec := rb.Attributes & 7; codec != 1 {
			t.Fatalf("batch at %d is stored with codec %d, expected gzip (1)", rb.FirstOffset, codec)
		}
		if crc := broker.RecordBatchCRC(b[21:size]); crc != uint32(rb.CRC) {
			t.Fatalf("batch at %d: CRC %#x, computed %#x", rb.FirstOffset, uint32(rb.CRC), crc)
		}
		if rb.ProducerID < 0 || int64(rb.FirstSequence) != next {
			t.Errorf("batch at %d: producer id %d, base sequence %d; expected the idempotent producer's, sequence %d", rb.FirstOffset, rb.ProducerID, rb.FirstSequence, next)
		}
		raw, err := kgo.DefaultDecompressor().Decompress(rb.Records, kgo.CodecGzip)
		if err != nil {
			t.Fatalf("batch at %d: %v", rb.FirstOffset, err)
		}
		for range rb.NumRecords {
			var r kmsg.Record
			if err := r.ReadFrom(raw); err != nil {
				t.Fatalf("record at %d: %v", next, err)
			}
			raw = raw[len(r.AppendTo(nil)):]
			if off := rb.FirstOffset + int64(r.OffsetDelta); off != next || string(r.Key) != fmt.Sprintf("key-%05d", next) || string(r.Value) != fmt.Sprintf("confluent-%05d", next) {
				t.Fatalf("record at %d: offset %d key %q value %q", next, off, r.Key, r.Value)
			}
			next++
		}
		if len(raw) != 0 {
			t.Fatalf("batch at %d: %d bytes after its records", rb.FirstOffset, len(raw))
		}
		b = b[size:]
	}
	if next != n {
		t.Fatalf("%d records stored, expected %d", next, n)
	}

	// confluent-kafka's consumer reads the gzip batches.
	var want strings.Builder
	for i := range n {
		fmt.Fprintf(&want, "0 %d x%x x%x\n", i, fmt.Sprintf("key-%05d", i), fmt.Sprintf("confluent-%05d", i))
	}
	if got := s.run(t, "dump", c.Addr(0), topic); got != want.String() {
		t.Fatalf("dump printed:\n%s\nexpected:\n%s", got, want.String())
	}
}
