package integration

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// compactedView is a replica's log as a consumer reads it from the log start offset up
// to the high watermark (Fetch v12 at that node: KIP-392 for followers), with the gaps
// compaction leaves: the records seen, and the latest value per key.
type compactedView struct {
	hw      int64
	records int
	latest  map[string]string
}

func compactedReplicaView(c *Cluster, i int, topic string, partition int32) (compactedView, error) {
	v := compactedView{latest: map[string]string{}}
	off, err := listOffsetAt(c, i, -2, topic, partition, -2)
	if err != nil {
		return v, err
	}
	prev := int64(-1)
	for range 100_000 {
		sp, err := fetchAt(c, i, 12, topic, partition, off)
		if err != nil {
			return v, err
		}
		if sp.ErrorCode != 0 {
			return v, fmt.Errorf("node-%d: fetch at %d: %w", i, off, kerr.ErrorForCode(sp.ErrorCode))
		}
		if off >= sp.HighWatermark {
			v.hw = sp.HighWatermark
			return v, nil
		}
		b, start := sp.RecordBatches, off
		for len(b) >= recordBatchHeaderSize {
			var rb kmsg.RecordBatch
			if err := rb.ReadFrom(b); err != nil {
				break // a partial batch ends a size-limited answer
			}
			size := int(rb.Length) + 12
			if rb.FirstOffset <= prev {
				return v, fmt.Errorf("node-%d: batch at %d after offset %d", i, rb.FirstOffset, prev)
			}
			raw := rb.Records
			if c := rb.Attributes & 7; c != 0 {
				if raw, err = kgo.DefaultDecompressor().Decompress(raw, kgo.CompressionCodecType(c)); err != nil {
					return v, err
				}
			}
			for range rb.NumRecords {
				var r kmsg.Record
				if err := r.ReadFrom(raw); err != nil {
					return v, fmt.Errorf("node-%d: record in batch %d: %w", i, rb.FirstOffset, err)
				}
				raw = raw[len(r.AppendTo(nil)):]
				v.records++
				v.latest[string(r.Key)] = string(r.Value)
			}
			prev = rb.FirstOffset + int64(rb.LastOffsetDelta)
			off, b = prev+1, b[size:]
		}
		if off == start {
			return v, fmt.Errorf("node-%d: no whole batch at %d", i, off)
		}
	}
	return v, errors.New("too many fetches")
}

// TestCompaction_ThreeReplicas writes many versions of few keys to a compacted topic
// with three replicas: each replica cleans its own log, and a consumer reading any
// replica (KIP-392) sees every key with its latest value and far fewer records. A
// record without a key is refused with INVALID_RECORD.
func TestCompaction_ThreeReplicas(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, WithProperty("log.cleaner.backoff.ms", "50"), WithProperty("log.cleaner.threads", "2"))
	const topic, keys, rounds = "compacted", 100, 60
	c.CreateTopicRF(t, topic, 1, 3, map[string]*string{
		"cleanup.policy":            new("compact"),
		"segment.bytes":             new("8192"),
		"min.cleanable.dirty.ratio": new("0.1"),
	})
	cl := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	ctx := testContext(t)
	want := map[string]string{}
	for r := range rounds {
		var recs []*kgo.Record
		for k := range keys {
			key, value := recordKey(k), fmt.Sprintf("round-%d-of-%d", r, k)
			want[key] = value
			recs = append(recs, &kgo.Record{Key: []byte(key), Value: []byte(value)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("no key")}).FirstErr()
	if !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("a keyless record on a compacted topic: %v, want INVALID_RECORD", err)
	}
	for i := range 3 {
		testwait.For(t, 45*time.Second, func() error {
			v, err := compactedReplicaView(c, i, topic, 0)
			if err != nil {
				return err
			}
			if v.hw != keys*rounds {
				return fmt.Errorf("node-%d: high watermark %d", i, v.hw)
			}
			for k, val := range want {
				if v.latest[k] != val {
					return fmt.Errorf("node-%d: key %s reads %q, want %q", i, k, v.latest[k], val)
				}
			}
			if v.records > keys*rounds/4 {
				return fmt.Errorf("node-%d: still %d of %d records", i, v.records, keys*rounds)
			}
			return nil
		})
	}
	// Every node's segment files, read as a Kafka tool would, directly from disk.
	for i := range 3 {
		checkKafkaSegments(t, filepath.Join(c.nodes[i].dir, "logs", topic+"-0"))
	}
	// A consumer from offset 0 sees each key's latest value last.
	consumer := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string]string{}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for len(got) < keys || !equalMaps(got, want) {
		fs := consumer.PollFetches(cctx)
		if err := cctx.Err(); err != nil {
			t.Fatalf("consumer saw %d keys: %v", len(got), err)
		}
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Key)] = string(r.Value) })
	}
}

// checkKafkaSegments reads every sealed .log file of a partition directory (the active
// one may be mid-append; one removed by a concurrent swap is skipped) independently of
// Petrel: whole v2 batches back to back, CRC-32C over attributes..end, the record count
// decodable with kmsg, offsets strictly increasing across files.
func checkKafkaSegments(t *testing.T, dir string) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(names) == 0 {
		t.Fatalf("%s: no segments (%v)", dir, err)
	}
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	prev := int64(-1)
	for _, name := range names[:len(names)-1] {
		data, err := os.ReadFile(name)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for len(data) > 0 {
			var rb kmsg.RecordBatch
			if len(data) < recordBatchHeaderSize || rb.ReadFrom(data) != nil || int(rb.Length)+12 > len(data) {
				t.Fatalf("%s: a torn batch after offset %d", name, prev)
			}
			size := int(rb.Length) + 12
			if rb.Magic != 2 || uint32(rb.CRC) != crc32.Checksum(data[21:size], castagnoli) {
				t.Fatalf("%s: batch at %d: magic %d, bad CRC", name, rb.FirstOffset, rb.Magic)
			}
			if rb.FirstOffset <= prev || rb.NumRecords > rb.LastOffsetDelta+1 {
				t.Fatalf("%s: batch at %d (last delta %d, %d records) after offset %d", name, rb.FirstOffset, rb.LastOffsetDelta, rb.NumRecords, prev)
			}
			prev = rb.FirstOffset + int64(rb.LastOffsetDelta)
			data = data[size:]
		}
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
