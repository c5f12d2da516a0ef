package segment

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// batchSpec describes a test batch built with kmsg.
type batchSpec struct {
	records       int   // number of records, at least 1
	valueSize     int   // bytes per value
	baseTimestamp int64 // first record's timestamp in ms
	tsStep        int64 // timestamp increment per record
	codec         int8  // 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd
	headers       bool  // add two headers per record
	logAppendTime bool  // set the LogAppendTime attribute
	seed          byte  // varies the payload
	random        bool  // random (incompressible) values instead of the seeded pattern
}

// encodeRecords encodes the records section of spec, uncompressed.
func encodeRecords(spec batchSpec) []byte {
	var out []byte
	for i := 0; i < spec.records; i++ {
		value := make([]byte, spec.valueSize)
		for j := range value {
			value[j] = byte(i*7+j) ^ spec.seed
		}
		if spec.random {
			_, _ = rand.Read(value)
		}
		r := kmsg.Record{
			TimestampDelta64: int64(i) * spec.tsStep,
			OffsetDelta:      int32(i),
			Key:              []byte(fmt.Sprintf("key-%d", i)),
			Value:            value,
		}
		if spec.headers {
			r.Headers = []kmsg.Header{{Key: "h1", Value: []byte("v1")}, {Key: "trace", Value: []byte(fmt.Sprint(i))}}
		}
		body := r.AppendTo(nil) // Length 0 encodes in one byte
		r.Length = int32(len(body) - 1)
		out = r.AppendTo(out)
	}
	return out
}

// makeBatch builds one valid v2 batch with baseOffset 0 and partitionLeaderEpoch -1, as a
// producer sends it.
func makeBatch(tb testing.TB, spec batchSpec) []byte {
	tb.Helper()
	if spec.records < 1 {
		spec.records = 1
	}
	raw := encodeRecords(spec)
	if spec.codec != 0 {
		codecs := []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}
		c, err := kgo.DefaultCompressor(codecs[spec.codec])
		if err != nil {
			tb.Fatal(err)
		}
		var buf bytes.Buffer
		compressed, used := c.Compress(&buf, raw)
		if int8(used) != spec.codec {
			tb.Fatalf("compressor used codec %d, want %d", used, spec.codec)
		}
		raw = append([]byte(nil), compressed...)
	}
	attrs := int16(spec.codec)
	if spec.logAppendTime {
		attrs |= attributeLogAppendTime
	}
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           attrs,
		LastOffsetDelta:      int32(spec.records - 1),
		FirstTimestamp:       spec.baseTimestamp,
		MaxTimestamp:         spec.baseTimestamp + int64(spec.records-1)*spec.tsStep,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(spec.records),
		Records:              raw,
	}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[offsetBatchLength:], uint32(len(b)-batchLengthOverhead))
	binary.BigEndian.PutUint32(b[offsetCRC:], crc32.Checksum(b[offsetAttributes:], castagnoli))
	return b
}

// decompressForTest is the Decompressor the broker will pass: kgo's default one.
func decompressForTest(codec int8, b []byte) ([]byte, error) {
	return kgo.DefaultDecompressor().Decompress(b, kgo.CompressionCodecType(codec))
}

// testClock is a settable clock for OpenOptions.Now.
type testClock struct{ t time.Time }

func (c *testClock) now() time.Time          { return c.t }
func (c *testClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// smallConfig returns a config with small segments and indexes for tests.
func smallConfig() Config {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 64 << 10
	cfg.SegmentIndexBytes = 4 << 10
	cfg.IndexIntervalBytes = 1024
	return cfg
}

// openTestLog opens a log in a fresh temporary directory and closes it at cleanup.
func openTestLog(tb testing.TB, cfg Config, opts OpenOptions) (*Log, string) {
	tb.Helper()
	dir := tb.TempDir()
	l, _, err := Open(dir, cfg, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	return l, dir
}

// appendN appends n batches of spec as leader in epoch and returns copies of the stored
// batches (with their assigned offsets and epoch).
func appendN(tb testing.TB, l *Log, n int, spec batchSpec, epoch int32) [][]byte {
	tb.Helper()
	var out [][]byte
	for i := 0; i < n; i++ {
		spec.seed = byte(i)
		b := makeBatch(tb, spec)
		if _, err := l.AppendAsLeader(b, epoch); err != nil {
			tb.Fatalf("append %d: %v", i, err)
		}
		out = append(out, b)
	}
	return out
}

// readAll reads every batch from the log start to the log end offset, batch by batch.
func readAll(tb testing.TB, l *Log) [][]byte {
	tb.Helper()
	var out [][]byte
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		r, err := l.Read(off, 1, l.LogEndOffset())
		if err != nil {
			tb.Fatalf("read at %d: %v", off, err)
		}
		b, err := r.Bytes()
		r.Release()
		if err != nil {
			tb.Fatal(err)
		}
		if r.Size == 0 {
			tb.Fatalf("empty read at %d below the log end offset %d", off, l.LogEndOffset())
		}
		out = append(out, b)
		off = r.LastOffset + 1
	}
	return out
}

// reopen closes l and opens dir again with opts.
func reopen(tb testing.TB, l *Log, dir string, cfg Config, opts OpenOptions) (*Log, *RecoveryReport) {
	tb.Helper()
	if err := l.Close(); err != nil {
		tb.Fatal(err)
	}
	nl, rep, err := Open(dir, cfg, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { nl.Close() })
	return nl, rep
}
