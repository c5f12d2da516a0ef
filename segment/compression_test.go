package segment

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ctCodecs are the codecs of a v2 batch, by attribute value.
var ctCodecs = []struct {
	name  string
	codec int8
}{{"none", 0}, {"gzip", 1}, {"snappy", 2}, {"lz4", 3}, {"zstd", 4}}

// ctRecord is one record of a compression test batch.
type ctRecord struct {
	key, value []byte // nil encodes a null key or value
	headers    []kmsg.Header
	ts         int64 // absolute timestamp in ms
}

// ctBatchOpts are the batch-level settings of ctBuildBatch.
type ctBatchOpts struct {
	codec int8
	// logAppendTime, when set, marks the batch LogAppendTime with this maxTimestamp (as
	// the broker stamps it); record timestamps are then ignored by readers.
	logAppendTime int64
}

// ctBuildBatch builds a producer batch (baseOffset 0, partitionLeaderEpoch -1) of recs with
// kmsg, compressed with kgo's default compressor. Record timestamps may go backwards: the
// batch's baseTimestamp is the first record's and its maxTimestamp the largest. It also
// returns the size of the uncompressed records section.
func ctBuildBatch(tb testing.TB, recs []ctRecord, o ctBatchOpts) (batch []byte, rawRecords int) {
	tb.Helper()
	base, maxTs := recs[0].ts, recs[0].ts
	var raw []byte
	for i, rec := range recs {
		maxTs = max(maxTs, rec.ts)
		r := kmsg.Record{
			TimestampDelta64: rec.ts - base,
			OffsetDelta:      int32(i),
			Key:              rec.key,
			Value:            rec.value,
			Headers:          rec.headers,
		}
		body := r.AppendTo(nil) // Length 0 encodes in one byte
		r.Length = int32(len(body) - 1)
		raw = r.AppendTo(raw)
	}
	rawRecords = len(raw)
	if o.codec != 0 {
		codecs := []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}
		c, err := kgo.DefaultCompressor(codecs[o.codec])
		if err != nil {
			tb.Fatal(err)
		}
		var buf bytes.Buffer
		compressed, used := c.Compress(&buf, raw)
		if int8(used) != o.codec {
			tb.Fatalf("compressor used codec %d, want %d", used, o.codec)
		}
		raw = append([]byte(nil), compressed...)
	}
	attrs := int16(o.codec)
	if o.logAppendTime != 0 {
		attrs |= attributeLogAppendTime
		maxTs = o.logAppendTime
	}
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           attrs,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       base,
		MaxTimestamp:         maxTs,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(recs)),
		Records:              raw,
	}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[offsetBatchLength:], uint32(len(b)-batchLengthOverhead))
	binary.BigEndian.PutUint32(b[offsetCRC:], crc32.Checksum(b[offsetAttributes:], castagnoli))
	return b, rawRecords
}

// ctPayload is a JSON-ish event: repetitive like real traffic, so that it compresses, but
// different for every record.
func ctPayload(batch, i int) []byte {
	statuses := []string{"created", "paid", "shipped", "delivered", "returned"}
	return fmt.Appendf(nil,
		`{"order_id":%d,"customer":"customer-%05d","status":"%s","currency":"EUR","amount_cents":%d,`+
			`"items":[{"sku":"SKU-%04d","qty":%d},{"sku":"SKU-%04d","qty":1}],`+
			`"shipping":{"country":"DE","city":"Berlin","street":"Example Strasse %d"},"note":"%s"}`,
		batch*1_000_000+i, (i*7919)%100000, statuses[(batch+i)%len(statuses)], 1000+(i*37)%9000,
		i%500, 1+i%4, (i*13)%500, i%200, bytes.Repeat([]byte{'a' + byte(i%26)}, i%40))
}

// ctRecords returns n records for batch number batch, with keys, values and headers, some
// of them null, and timestamps ts0, ts0+1, ...
func ctRecords(batch, n int, ts0 int64) []ctRecord {
	recs := make([]ctRecord, n)
	for i := range recs {
		r := ctRecord{
			key:   fmt.Appendf(nil, "order-%d-%d", batch, i),
			value: ctPayload(batch, i),
			ts:    ts0 + int64(i),
			headers: []kmsg.Header{
				{Key: "content-type", Value: []byte("application/json")},
				{Key: "trace-id", Value: fmt.Appendf(nil, "%016x", uint64(batch)<<32|uint64(i))},
			},
		}
		switch i % 10 {
		case 3:
			r.key = nil // null key
		case 5:
			r.headers = append(r.headers, kmsg.Header{Key: "null-value"}) // null header value
		case 7:
			r.headers = nil
		case 9:
			r.value = []byte{} // empty, not null
		}
		recs[i] = r
	}
	return recs
}

// ctDecodeRecords decodes count records of an uncompressed records section with kmsg,
// using each record's length varint to find the next one.
func ctDecodeRecords(tb testing.TB, b []byte, count int) []kmsg.Record {
	tb.Helper()
	out := make([]kmsg.Record, 0, count)
	for len(b) > 0 {
		length, n := binary.Varint(b)
		if n <= 0 || length < 0 || int64(len(b)-n) < length {
			tb.Fatalf("record %d: bad length varint", len(out))
		}
		var r kmsg.Record
		if err := r.ReadFrom(b[:n+int(length)]); err != nil {
			tb.Fatalf("record %d: %v", len(out), err)
		}
		if int64(r.Length) != length {
			tb.Fatalf("record %d: length %d, varint said %d", len(out), r.Length, length)
		}
		out = append(out, r)
		b = b[n+int(length):]
	}
	if len(out) != count {
		tb.Fatalf("decoded %d records, the batch says %d", len(out), count)
	}
	return out
}

// sameNullable reports whether a and b are equal, a null (nil) slice differing from an
// empty one.
func sameNullable(a, b []byte) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

// ctStored is what one appended batch must read back as.
type ctStored struct {
	producer []byte // the bytes the producer sent, before AppendAsLeader stamped them
	base     int64
	epoch    int32
	codec    int8
	recs     []ctRecord
}

// checkStoredBatch checks that got, read from the log, is w's producer batch with only
// the baseOffset and partitionLeaderEpoch rewritten, that its CRC verifies, and that
// kmsg and kgo decode every record as produced.
func checkStoredBatch(t *testing.T, got []byte, w ctStored) {
	t.Helper()
	if len(got) != len(w.producer) {
		t.Fatalf("batch at %d: read %d bytes, produced %d", w.base, len(got), len(w.producer))
	}
	if !bytes.Equal(got[8:12], w.producer[8:12]) || !bytes.Equal(got[16:], w.producer[16:]) {
		t.Fatalf("batch at %d: bytes other than baseOffset and partitionLeaderEpoch changed", w.base)
	}
	if base := int64(binary.BigEndian.Uint64(got[0:8])); base != w.base {
		t.Fatalf("stored baseOffset %d, want %d", base, w.base)
	}
	if epoch := int32(binary.BigEndian.Uint32(got[12:16])); epoch != w.epoch {
		t.Fatalf("batch at %d: stored partitionLeaderEpoch %d, want %d", w.base, epoch, w.epoch)
	}
	h, err := ValidateBatch(got)
	if err != nil {
		t.Fatalf("batch at %d: %v", w.base, err)
	}
	if h.Codec() != w.codec || h.RecordCount != int32(len(w.recs)) {
		t.Fatalf("batch at %d: codec %d, %d records", w.base, h.Codec(), h.RecordCount)
	}

	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(got); err != nil {
		t.Fatalf("kmsg cannot decode the batch at %d: %v", w.base, err)
	}
	if crc := crc32.Checksum(got[offsetAttributes:], castagnoli); uint32(rb.CRC) != crc {
		t.Fatalf("batch at %d: CRC %#x, computed %#x", w.base, uint32(rb.CRC), crc)
	}
	if rb.FirstOffset != w.base || rb.PartitionLeaderEpoch != w.epoch || rb.Magic != 2 ||
		int8(rb.Attributes&7) != w.codec || rb.NumRecords != int32(len(w.recs)) {
		t.Fatalf("batch at %d: kmsg header %+v", w.base, rb)
	}
	records := rb.Records
	if w.codec != 0 {
		if records, err = kgo.DefaultDecompressor().Decompress(rb.Records, kgo.CompressionCodecType(w.codec)); err != nil {
			t.Fatalf("batch at %d: decompressing: %v", w.base, err)
		}
	}
	for i, r := range ctDecodeRecords(t, records, len(w.recs)) {
		want := w.recs[i]
		if r.OffsetDelta != int32(i) || rb.FirstTimestamp+r.TimestampDelta64 != want.ts {
			t.Fatalf("record %d: offset delta %d, timestamp %d, want %d", w.base+int64(i), r.OffsetDelta, rb.FirstTimestamp+r.TimestampDelta64, want.ts)
		}
		if !sameNullable(r.Key, want.key) || !sameNullable(r.Value, want.value) {
			t.Fatalf("record %d: key %q value %q, want %q %q", w.base+int64(i), r.Key, r.Value, want.key, want.value)
		}
		if len(r.Headers) != len(want.headers) {
			t.Fatalf("record %d: %d headers, want %d", w.base+int64(i), len(r.Headers), len(want.headers))
		}
		for j, hd := range r.Headers {
			if hd.Key != want.headers[j].Key || !sameNullable(hd.Value, want.headers[j].Value) {
				t.Fatalf("record %d header %d: %q=%q, want %q=%q", w.base+int64(i), j, hd.Key, hd.Value, want.headers[j].Key, want.headers[j].Value)
			}
		}
	}
}

// dirFiles returns the contents of every file in dir by name.
func dirFiles(tb testing.TB, dir string) map[string][]byte {
	tb.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

func TestCompressedBatchesRoundTrip(t *testing.T) {
	const (
		batches = 6
		records = 200
	)
	for _, c := range ctCodecs {
		t.Run(c.name, func(t *testing.T) {
			cfg := smallConfig() // 64 KiB segments: uncompressed batches roll every time
			leader, leaderDir := openTestLog(t, cfg, OpenOptions{Decompress: decompressForTest})
			var want []ctStored
			for i := range batches {
				recs := ctRecords(i, records, 1_700_000_000_000+int64(i)*10_000)
				producer, rawSize := ctBuildBatch(t, recs, ctBatchOpts{codec: c.codec})
				if c.codec != 0 && len(producer) > rawSize/2 {
					t.Fatalf("codec %s: %d-byte records section compressed only to a %d-byte batch", c.name, rawSize, len(producer))
				}
				epoch := int32(2)
				if i >= batches/2 {
					epoch = 5
				}
				buf := slices.Clone(producer)
				info, err := leader.AppendAsLeader(buf, epoch)
				if err != nil {
					t.Fatalf("append %d: %v", i, err)
				}
				base := int64(i * records)
				if info.FirstOffset != base || info.LastOffset != base+records-1 || info.Records != records || info.Bytes != int64(len(producer)) {
					t.Fatalf("append %d: %+v", i, info)
				}
				want = append(want, ctStored{producer: producer, base: base, epoch: epoch, codec: c.codec, recs: recs})
			}
			if c.codec == 0 && len(leader.Segments()) < 3 {
				t.Fatalf("expected rolls, have %d segments", len(leader.Segments()))
			}

			// Batch by batch.
			got := readAll(t, leader)
			if len(got) != len(want) {
				t.Fatalf("read %d batches, appended %d", len(got), len(want))
			}
			for i := range want {
				checkStoredBatch(t, got[i], want[i])
			}

			// In ranges of many batches, as fetches read them; each range goes to a follower.
			follower, followerDir := openTestLog(t, cfg, OpenOptions{})
			var ranges [][]byte
			for off := int64(0); off < leader.LogEndOffset(); {
				r, err := leader.Read(off, 1<<20, leader.LogEndOffset())
				if err != nil {
					t.Fatal(err)
				}
				b, err := r.Bytes()
				if err != nil {
					t.Fatal(err)
				}
				if r.FirstOffset != off || r.Size == 0 {
					t.Fatalf("read at %d: %+v", off, r)
				}
				ranges = append(ranges, b)
				if _, err := follower.AppendAsFollower(b); err != nil {
					t.Fatalf("follower append at %d: %v", off, err)
				}
				off = r.LastOffset + 1
			}
			if !bytes.Equal(bytes.Join(ranges, nil), bytes.Join(got, nil)) {
				t.Fatal("ranged reads differ from batch-by-batch reads")
			}
			if follower.LogEndOffset() != leader.LogEndOffset() ||
				!slices.Equal(follower.Segments(), leader.Segments()) ||
				!slices.Equal(follower.LeaderEpochs().Entries(), leader.LeaderEpochs().Entries()) {
				t.Fatalf("follower LEO %d segments %+v epochs %v; leader LEO %d segments %+v epochs %v",
					follower.LogEndOffset(), follower.Segments(), follower.LeaderEpochs().Entries(),
					leader.LogEndOffset(), leader.Segments(), leader.LeaderEpochs().Entries())
			}
			if e := leader.LeaderEpochs().Entries(); !slices.Equal(e, []EpochEntry{{2, 0}, {5, batches / 2 * records}}) {
				t.Fatalf("leader epochs %v", e)
			}

			// Closed, the two directories hold the same files byte for byte: segments,
			// indexes and the leader epoch checkpoint.
			if err := leader.Close(); err != nil {
				t.Fatal(err)
			}
			if err := follower.Close(); err != nil {
				t.Fatal(err)
			}
			lf, ff := dirFiles(t, leaderDir), dirFiles(t, followerDir)
			if len(lf) != len(ff) {
				t.Fatalf("leader has files %v, follower %v", slices.Sorted(maps.Keys(lf)), slices.Sorted(maps.Keys(ff)))
			}
			for name, data := range lf {
				if fdata, ok := ff[name]; !ok || !bytes.Equal(data, fdata) {
					t.Fatalf("follower's %s differs from the leader's (present %v, %d vs %d bytes)", name, ok, len(fdata), len(data))
				}
			}
		})
	}
}

// tsBatch is the model of one batch for the timestamp lookup tests.
type tsBatch struct {
	base, last int64
	maxTs      int64
	compressed bool
	ts         []int64 // record timestamps as readers see them
}

// expectOffsetForTimestamp is Kafka's ListOffsets-by-timestamp over the model: the first
// record at or after start whose timestamp is at least q, scanning batches in offset order
// and skipping batches whose maxTimestamp is below q. Without a decompressor (exact false)
// a compressed batch answers its first offset at or after start, with its maxTimestamp.
func expectOffsetForTimestamp(model []tsBatch, q, start int64, exact bool) (TimestampOffset, bool) {
	for _, b := range model {
		if b.last < start || b.maxTs < q {
			continue
		}
		if b.compressed && !exact {
			return TimestampOffset{max(b.base, start), b.maxTs}, true
		}
		for i, ts := range b.ts {
			if off := b.base + int64(i); off >= start && ts >= q {
				return TimestampOffset{off, ts}, true
			}
		}
	}
	return TimestampOffset{}, false
}

// expectMaxTimestamp is ListOffsets with timestamp -3 over the model: the first record
// holding the largest timestamp (or, for a compressed batch without a decompressor, the
// first offset at or after start of the first batch holding it).
func expectMaxTimestamp(model []tsBatch, start int64, exact bool) (TimestampOffset, bool) {
	var best *tsBatch
	for i := range model {
		if b := &model[i]; b.last >= start && (best == nil || b.maxTs > best.maxTs) {
			best = b
		}
	}
	if best == nil {
		return TimestampOffset{}, false
	}
	if best.compressed && !exact {
		return TimestampOffset{max(best.base, start), best.maxTs}, true
	}
	for i, ts := range best.ts {
		if off := best.base + int64(i); off >= start && ts == best.maxTs {
			return TimestampOffset{off, ts}, true
		}
	}
	return TimestampOffset{max(best.base, start), best.maxTs}, true
}

// TestCompressedTimestampLookups checks OffsetForTimestamp and MaxTimestampOffset against a
// model, for every timestamp around every record's, in batches with increasing, equal,
// out-of-order and LogAppendTime timestamps: exact record offsets with a decompressor,
// the documented batch-level answer without one, before and after the log start moves
// into a batch, and after recovery rebuilt the indexes.
func TestCompressedTimestampLookups(t *testing.T) {
	const B = 1_700_000_000_000
	const n = 20 // records per batch
	patterns := []struct {
		name string
		ts   func(i int) int64
		lat  int64 // LogAppendTime maxTimestamp, or 0
	}{
		{"increasing", func(i int) int64 { return B + 100 + int64(i)*10 }, 0},
		{"all equal", func(i int) int64 { return B + 500 }, 0},
		{"out of order", func(i int) int64 { return B + 600 + int64((i*7)%n)*10 }, 0},
		{"overlapping", func(i int) int64 { return B + 700 + int64(i)*5 }, 0},
		{"log append time", func(i int) int64 { return B + int64(i) }, B + 900},
		{"repeated max", func(i int) int64 { return B + 950 + int64(i%5)*10 }, 0},
		{"all at the max", func(i int) int64 { return B + 990 }, 0},
		{"late data", func(i int) int64 { return B + 50 + int64(i) }, 0},
		{"increasing again", func(i int) int64 { return B + 995 - int64(n) + int64(i) }, 0},
	}
	for _, c := range ctCodecs {
		t.Run(c.name, func(t *testing.T) {
			cfg := smallConfig()
			cfg.SegmentBytes = 6 << 10
			cfg.IndexIntervalBytes = 1 // an index entry for nearly every batch
			l, dir := openTestLog(t, cfg, OpenOptions{Decompress: decompressForTest})
			// Every timestamp around every record's for no codec and snappy; a sample for the
			// other codecs, whose lookups only differ in decompression (lz4 is slow under
			// the race detector).
			full := c.codec == 0 || c.codec == 2

			var model []tsBatch
			queries := map[int64]bool{B - 1: true}
			for bi, p := range patterns {
				recs := make([]ctRecord, n)
				for i := range recs {
					recs[i] = ctRecord{key: fmt.Appendf(nil, "k%d", i), value: ctPayload(bi, i), ts: p.ts(i)}
				}
				batch, _ := ctBuildBatch(t, recs, ctBatchOpts{codec: c.codec, logAppendTime: p.lat})
				info, err := l.AppendAsLeader(batch, 1)
				if err != nil {
					t.Fatalf("%s: %v", p.name, err)
				}
				h, _ := ParseBatchHeader(batch)
				m := tsBatch{base: info.FirstOffset, last: info.LastOffset, maxTs: h.MaxTimestamp, compressed: c.codec != 0}
				for i, r := range recs {
					ts := r.ts
					if p.lat != 0 {
						ts = p.lat // readers see the broker's time on every record
					}
					m.ts = append(m.ts, ts)
					if full {
						queries[ts-1], queries[ts], queries[ts+1] = true, true, true
					} else if i == 0 || i == n/2 {
						queries[ts], queries[ts+1] = true, true
					}
				}
				queries[m.maxTs], queries[m.maxTs+1] = true, true
				model = append(model, m)
			}
			if len(l.Segments()) < 2 {
				t.Fatalf("want several segments, have %d", len(l.Segments()))
			}
			qs := slices.Sorted(maps.Keys(queries))

			check := func(phase string, l *Log, exact bool) {
				t.Helper()
				start := l.LogStartOffset()
				for _, q := range qs {
					got, ok, err := l.OffsetForTimestamp(q)
					if err != nil {
						t.Fatalf("%s: OffsetForTimestamp(B%+d): %v", phase, q-B, err)
					}
					want, wok := expectOffsetForTimestamp(model, q, start, exact)
					if ok != wok || got != want {
						t.Fatalf("%s: OffsetForTimestamp(B%+d) = %d@B%+d %v, want %d@B%+d %v",
							phase, q-B, got.Offset, got.Timestamp-B, ok, want.Offset, want.Timestamp-B, wok)
					}
				}
				got, ok, err := l.MaxTimestampOffset()
				want, wok := expectMaxTimestamp(model, start, exact)
				if err != nil || ok != wok || got != want {
					t.Fatalf("%s: MaxTimestampOffset = %d@B%+d %v %v, want %d@B%+d",
						phase, got.Offset, got.Timestamp-B, ok, err, want.Offset, want.Timestamp-B)
				}
			}

			check("with a decompressor", l, true)

			// Move the log start into the out-of-order batch, past its largest timestamp:
			// queries between the largest timestamp left and that one must skip to the next
			// batch.
			start := model[2].base + 18
			if err := l.AdvanceLogStartOffset(start); err != nil {
				t.Fatal(err)
			}
			if full {
				check("with a decompressor, log start moved", l, true)
			}

			// Reopened without a decompressor, recovering every segment: uncompressed batches
			// still answer exactly, compressed ones at batch granularity.
			l2, rep := reopen(t, l, dir, cfg, OpenOptions{LogStartOffset: start})
			if rep.SegmentsRecovered == 0 || l2.LogStartOffset() != start {
				t.Fatalf("reopen: %+v, log start %d", rep, l2.LogStartOffset())
			}
			check("without a decompressor", l2, c.codec == 0)
			if !full {
				return
			}

			// And reopened once more, trusting the indexes written at close, with one.
			l3, _ := reopen(t, l2, dir, cfg, OpenOptions{LogStartOffset: start, CleanShutdown: true, Decompress: decompressForTest})
			check("after a clean shutdown", l3, true)
		})
	}
}
