package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kv is one record of a compaction test: a nil value is a tombstone.
type kv struct {
	key, value []byte
}

// keyedBatch builds a producer's batch of recs with codec and, when pid >= 0, the
// idempotent producer fields.
func keyedBatch(tb testing.TB, recs []kv, codec int8, ts int64, pid int64, seq int32) []byte {
	tb.Helper()
	var raw []byte
	for i, r := range recs {
		rec := kmsg.Record{TimestampDelta64: int64(i), OffsetDelta: int32(i), Key: r.key, Value: r.value}
		body := rec.AppendTo(nil)
		rec.Length = int32(len(body) - 1)
		raw = rec.AppendTo(raw)
	}
	if codec != 0 {
		raw = compressForTest(tb, codec, raw)
	}
	epoch := int16(-1)
	if pid < 0 {
		seq = -1
	} else {
		epoch = 0
	}
	rb := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, Attributes: int16(codec),
		LastOffsetDelta: int32(len(recs) - 1), FirstTimestamp: ts, MaxTimestamp: ts + int64(len(recs)-1),
		ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq, NumRecords: int32(len(recs)), Records: raw}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[offsetBatchLength:], uint32(len(b)-batchLengthOverhead))
	binary.BigEndian.PutUint32(b[offsetCRC:], crc32.Checksum(b[offsetAttributes:], castagnoli))
	return b
}

func compressForTest(tb testing.TB, codec int8, raw []byte) []byte {
	codecs := []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}
	c, err := kgo.DefaultCompressor(codecs[codec])
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	out, _ := c.Compress(&buf, raw)
	return append([]byte(nil), out...)
}

func compressorForTest(codec int8, raw []byte) ([]byte, error) {
	codecs := []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}
	c, err := kgo.DefaultCompressor(codecs[codec])
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	out, used := c.Compress(&buf, raw)
	if int8(used) != codec {
		return nil, fmt.Errorf("codec %d not used", codec)
	}
	return append([]byte(nil), out...), nil
}

// seen is one record as a consumer decodes it with kmsg (an independent reader).
type seen struct {
	offset     int64
	key, value string
	tombstone  bool
	timestamp  int64
}

// decodeBatch checks one stored batch the way a Kafka reader would and returns its
// records: framing, CRC-32C, record count, offsets inside the batch's range.
func decodeBatch(tb testing.TB, b []byte) (kmsg.RecordBatch, []seen) {
	tb.Helper()
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		tb.Fatalf("kmsg cannot read the batch: %v", err)
	}
	if int(rb.Length)+12 != len(b) {
		tb.Fatalf("batch length %d for %d bytes", rb.Length, len(b))
	}
	if crc := crc32.Checksum(b[21:], castagnoli); uint32(rb.CRC) != crc {
		tb.Fatalf("batch at %d: CRC %x, computed %x", rb.FirstOffset, rb.CRC, crc)
	}
	raw := rb.Records
	if c := rb.Attributes & 7; c != 0 {
		var err error
		if raw, err = decompressForTest(int8(c), raw); err != nil {
			tb.Fatalf("batch at %d: %v", rb.FirstOffset, err)
		}
	}
	var out []seen
	last := int32(-1)
	for i := int32(0); i < rb.NumRecords; i++ {
		var r kmsg.Record
		length, n := binary.Varint(raw)
		if n <= 0 || int(length)+n > len(raw) {
			tb.Fatalf("batch at %d: record %d framing", rb.FirstOffset, i)
		}
		if err := r.ReadFrom(raw[:n+int(length)]); err != nil {
			tb.Fatalf("batch at %d: record %d: %v", rb.FirstOffset, i, err)
		}
		raw = raw[n+int(length):]
		if r.OffsetDelta <= last || r.OffsetDelta > rb.LastOffsetDelta {
			tb.Fatalf("batch at %d: record %d has offset delta %d after %d (last %d)", rb.FirstOffset, i, r.OffsetDelta, last, rb.LastOffsetDelta)
		}
		last = r.OffsetDelta
		out = append(out, seen{rb.FirstOffset + int64(r.OffsetDelta), string(r.Key), string(r.Value), r.Value == nil, rb.FirstTimestamp + r.TimestampDelta64})
	}
	if len(raw) != 0 {
		tb.Fatalf("batch at %d: %d bytes after the last record", rb.FirstOffset, len(raw))
	}
	return rb, out
}

// consumeAll reads the log as a consumer from offset 0 and checks offsets increase.
func consumeAll(tb testing.TB, l *Log) ([]kmsg.RecordBatch, []seen) {
	tb.Helper()
	var batches []kmsg.RecordBatch
	var recs []seen
	prev := int64(-1)
	for _, b := range readAll(tb, l) {
		rb, rs := decodeBatch(tb, b)
		if rb.FirstOffset <= prev {
			tb.Fatalf("batch at %d follows offset %d", rb.FirstOffset, prev)
		}
		prev = rb.FirstOffset + int64(rb.LastOffsetDelta)
		batches = append(batches, rb)
		recs = append(recs, rs...)
	}
	return batches, recs
}

// checkSegmentFiles reads every .log file of dir independently of the Log: whole
// batches back to back, each accepted by decodeBatch, offsets increasing.
func checkSegmentFiles(tb testing.TB, dir string) {
	tb.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	prev := int64(-1)
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		for len(data) > 0 {
			if len(data) < 61 {
				tb.Fatalf("%s: %d trailing bytes", name, len(data))
			}
			n := int(binary.BigEndian.Uint32(data[8:])) + 12
			rb, _ := decodeBatch(tb, data[:n])
			if rb.FirstOffset <= prev {
				tb.Fatalf("%s: batch at %d after offset %d", name, rb.FirstOffset, prev)
			}
			prev = rb.FirstOffset + int64(rb.LastOffsetDelta)
			data = data[n:]
		}
	}
}

// cleanAll runs passes until the dirty section below upTo is clean and returns the
// final first dirty offset.
func cleanAll(tb testing.TB, l *Log, from, upTo int64, opts CleanOptions) int64 {
	tb.Helper()
	for pass := 0; pass < 1000; pass++ {
		opts.FirstDirtyOffset, opts.UncleanableOffset = from, upTo
		p, err := l.PrepareClean(opts)
		if err != nil {
			tb.Fatal(err)
		}
		if p == nil {
			return from
		}
		if err := p.Build(); err != nil {
			tb.Fatal(err)
		}
		res, err := l.CommitClean(p)
		if err != nil {
			tb.Fatal(err)
		}
		if res.CleanedUpTo <= from && pass > 0 {
			return from
		}
		from = res.CleanedUpTo
	}
	tb.Fatal("cleaning did not converge")
	return 0
}

// TestClean_Property appends random keyed records and tombstones with random segment
// sizes and offset map sizes, cleans, and compares a consumer's view with a reference
// model: below the cleaned offset each key shows only its latest record (tombstones
// until their delete horizon passes), the head is untouched, offsets increase.
func TestClean_Property(t *testing.T) {
	for seed := uint64(1); seed <= 25; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			cfg := smallConfig()
			cfg.Compacted = true
			cfg.SegmentBytes = int64(1024 + rng.IntN(8<<10))
			clock := &testClock{t: time.UnixMilli(1_700_000_000_000)}
			l, dir := openTestLog(t, cfg, OpenOptions{Now: clock.now})
			keys := 2 + rng.IntN(40)
			type ref struct {
				key, value string
				tombstone  bool
			}
			var model []ref // by offset
			var original [][]byte
			lastOfPid := map[int64][]byte{}
			seqs := map[int64]int32{}
			for b := 0; b < 50+rng.IntN(250); b++ {
				n := 1 + rng.IntN(5)
				var recs []kv
				for i := 0; i < n; i++ {
					k := fmt.Sprintf("k%d", rng.IntN(keys))
					var v []byte
					if rng.IntN(5) > 0 {
						v = []byte(fmt.Sprintf("v%d-%d", len(model), rng.IntN(1000)))
					}
					recs = append(recs, kv{[]byte(k), v})
					model = append(model, ref{k, string(v), v == nil})
				}
				pid := int64(-1)
				if rng.IntN(4) == 0 {
					pid = int64(1 + rng.IntN(3))
				}
				batch := keyedBatch(t, recs, 0, clock.t.UnixMilli(), pid, seqs[pid])
				if pid >= 0 {
					seqs[pid] += int32(n)
				}
				if _, err := l.AppendAsLeader(batch, 1); err != nil {
					t.Fatal(err)
				}
				original = append(original, batch)
				if pid >= 0 {
					lastOfPid[pid] = batch
				}
				clock.advance(time.Millisecond)
			}
			if rng.IntN(2) == 0 {
				if err := l.Roll(); err != nil {
					t.Fatal(err)
				}
			}
			upTo := l.LogEndOffset() - int64(rng.IntN(20))
			opts := CleanOptions{MaxMapBytes: int64(offsetMapEntryBytes * (3 + rng.IntN(100))), DeleteRetentionMs: 60_000}
			end := cleanAll(t, l, 0, upTo, opts)
			check := func(expired bool) {
				t.Helper()
				latest := map[string]int64{}
				for o := int64(0); o < end; o++ {
					latest[model[o].key] = o
				}
				var want []seen
				for o, r := range model {
					o := int64(o)
					keep := o >= end || latest[r.key] == o && (!r.tombstone || !expired)
					if keep {
						want = append(want, seen{offset: o, key: r.key, value: r.value, tombstone: r.tombstone})
					}
				}
				_, got := consumeAll(t, l)
				for i := range got {
					got[i].timestamp = 0
				}
				if !slices.Equal(got, want) {
					t.Fatalf("cleaned to %d of %d: consumer sees %d records, want %d\ngot  %v\nwant %v", end, len(model), len(got), len(want), got, want)
				}
				// The head is untouched, byte for byte.
				for _, b := range readAll(t, l) {
					h, _ := ParseBatchHeader(b)
					if h.BaseOffset >= end && !slices.ContainsFunc(original, func(o []byte) bool { return bytes.Equal(o, b) }) {
						t.Fatalf("head batch at %d changed", h.BaseOffset)
					}
				}
				// Each producer's last batch keeps its offsets and sequence.
				for pid, b := range lastOfPid {
					h, _ := ParseBatchHeader(b)
					found := false
					l.ScanBatchHeaders(0, func(x BatchHeader) error {
						if x.ProducerID == pid && x.BaseOffset == h.BaseOffset && x.LastOffset() == h.LastOffset() && x.BaseSequence == h.BaseSequence && x.ProducerEpoch == h.ProducerEpoch {
							found = true
						}
						return nil
					})
					if !found {
						t.Fatalf("producer %d lost its last batch at %d", pid, h.BaseOffset)
					}
				}
				checkSegmentFiles(t, dir)
			}
			check(false)
			clock.advance(61 * time.Second)
			if end > 0 {
				cleanAll(t, l, end, end, opts)
			}
			check(end > 0)
			// A clean reopen trusts the indexes the cleaner built; a reopen after a crash
			// recovers every segment. Both read the same.
			_, before := consumeAll(t, l)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l2, rep, err := Open(dir, cfg, OpenOptions{Now: clock.now, CleanShutdown: true})
			if err != nil {
				t.Fatal(err)
			}
			if rep.SegmentsRecovered != 0 {
				t.Fatalf("a clean reopen recovered %d segments (indexes %v)", rep.SegmentsRecovered, rep.IndexesRebuilt)
			}
			if _, after := consumeAll(t, l2); !slices.Equal(before, after) {
				t.Fatal("log reads differently after a clean reopen")
			}
			l2.closeFiles()
			l3, _, err := Open(dir, cfg, OpenOptions{Now: clock.now})
			if err != nil {
				t.Fatal(err)
			}
			defer l3.Close()
			if _, after := consumeAll(t, l3); !slices.Equal(before, after) {
				t.Fatal("log reads differently after reopening")
			}
		})
	}
}

var errCrash = errors.New("simulated crash")

// TestClean_CrashAtEverySwapStep stops the swap after each file operation and reopens:
// the log reads back either as before cleaning or as after, never a mix, and so does its
// transaction index. The logs: plain records; groups whose last batches cleaning removes
// (keyless records), so that their cleaned segments end early or hold nothing; aborted
// transactions whose markers go, so that the transaction indexes change.
func TestClean_CrashAtEverySwapStep(t *testing.T) {
	cfg := smallConfig()
	cfg.Compacted = true
	plain := func(t *testing.T, l *Log) {
		for i := 0; i < 120; i++ {
			if i%25 == 24 {
				l.Roll() // several segments, cleaned as one group
			}
			b := keyedBatch(t, []kv{{[]byte(fmt.Sprintf("k%d", i%7)), []byte(fmt.Sprintf("value-%d", i))}}, 0, int64(i), -1, 0)
			if _, err := l.AppendAsLeader(b, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	endsEarly := func(t *testing.T, l *Log) {
		for i := 0; i < 90; i++ {
			if i%30 == 29 {
				l.Roll()
			}
			key := []byte(fmt.Sprintf("k%d", i%5))
			if i%30 >= 20 && i < 60 || i >= 60 && i%30 >= 25 {
				key = nil // the tail of the first two segments, the very end of the third
			}
			b := keyedBatch(t, []kv{{key, bytes.Repeat([]byte{'v'}, 300)}}, 0, int64(i), -1, 0)
			if _, err := l.AppendAsLeader(b, 0); err != nil {
				t.Fatal(err)
			}
		}
		l.Roll()
		l.AppendAsLeader(keyedBatch(t, []kv{{[]byte("head"), []byte("h")}}, 0, 100, -1, 0), 0)
	}
	emptied := func(t *testing.T, l *Log) {
		for i := 0; i < 40; i++ {
			if i%10 == 9 {
				l.Roll()
			}
			b := keyedBatch(t, []kv{{nil, bytes.Repeat([]byte{'x'}, 400)}}, 0, int64(i), -1, 0)
			if _, err := l.AppendAsLeader(b, 0); err != nil {
				t.Fatal(err)
			}
		}
		l.Roll()
		l.AppendAsLeader(keyedBatch(t, []kv{{[]byte("head"), []byte("h")}}, 0, 100, -1, 0), 0)
	}
	aborts := func(t *testing.T, l *Log) {
		for i := 0; i < 12; i++ {
			pid := int64(10 + i%3)
			appendAll(t, l,
				keyedBatch(t, []kv{{[]byte(fmt.Sprintf("k%d", i%4)), []byte("plain")}}, 0, 0, -1, 0),
				txnBatch(t, []kv{{[]byte(fmt.Sprintf("t%d", i)), []byte("aborted")}}, pid, int32(i)),
				markerBatch(t, pid, false))
			if i%4 == 3 {
				l.Roll()
			}
		}
		l.AppendAsLeader(keyedBatch(t, []kv{{[]byte("head"), []byte("h")}}, 0, 100, -1, 0), 0)
	}
	for _, tc := range []struct {
		name  string
		build func(*testing.T, *Log)
		// passes: the reference cleans that many times, with the clock moved past
		// every delete horizon before the last; the crashed run's last pass is the
		// one stopped.
		passes int
	}{{"plain", plain, 1}, {"ends early", endsEarly, 1}, {"emptied", emptied, 1}, {"markers removed", aborts, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &testClock{t: time.UnixMilli(1_700_000_000_000)}
			opts := CleanOptions{MaxMapBytes: 1 << 20, DeleteRetentionMs: 1000}
			build := func(t *testing.T) (*Log, string) {
				l, dir := openTestLog(t, cfg, OpenOptions{Now: clock.now})
				tc.build(t, l)
				return l, dir
			}
			pass := func(l *Log, hook func(string) error) error {
				opts.UncleanableOffset = l.LogEndOffset()
				p, err := l.PrepareClean(opts)
				if err != nil || p == nil {
					t.Fatal(p, err)
				}
				if err := p.Build(); err != nil {
					t.Fatal(err)
				}
				p.hook = hook
				_, err = l.CommitClean(p)
				return err
			}
			prepare := func(t *testing.T) (*Log, string) {
				l, dir := build(t)
				for i := 0; i < tc.passes-1; i++ {
					if err := pass(l, nil); err != nil {
						t.Fatal(err)
					}
				}
				clock.advance(2 * time.Second)
				return l, dir
			}
			// The reference: the log before and after the last pass.
			ref, _ := prepare(t)
			_, before := consumeAll(t, ref)
			idxBefore, _ := ref.AbortedTxns()
			if err := pass(ref, nil); err != nil {
				t.Fatal(err)
			}
			_, after := consumeAll(t, ref)
			idxAfter, _ := ref.AbortedTxns()
			if slices.Equal(after, before) && slices.Equal(idxBefore, idxAfter) {
				t.Fatalf("the pass changed nothing: %d records", len(before))
			}
			for stop := 1; ; stop++ {
				l, dir := prepare(t)
				steps := 0
				err := pass(l, func(string) error {
					if steps++; steps == stop {
						return errCrash
					}
					return nil
				})
				l.closeFiles()
				l2, _, oerr := Open(dir, cfg, OpenOptions{Now: clock.now})
				if oerr != nil {
					t.Fatalf("stop %d: reopen: %v", stop, oerr)
				}
				_, got := consumeAll(t, l2)
				idx, ierr := l2.AbortedTxns()
				checkSegmentFiles(t, dir)
				leftovers, _ := filepath.Glob(filepath.Join(dir, "*.swap*"))
				cleaned, _ := filepath.Glob(filepath.Join(dir, "*.cleaned"))
				l2.Close()
				if ierr != nil {
					t.Fatalf("stop %d: %v", stop, ierr)
				}
				if len(leftovers)+len(cleaned) > 0 {
					t.Fatalf("stop %d: leftovers %v %v", stop, leftovers, cleaned)
				}
				old := slices.Equal(got, before) && slices.Equal(idx, idxBefore)
				if !old && !(slices.Equal(got, after) && slices.Equal(idx, idxAfter)) {
					t.Fatalf("stop %d: the log is neither the old nor the new one (%d records, index %v; before %d, %v; after %d, %v)",
						stop, len(got), idx, len(before), idxBefore, len(after), idxAfter)
				}
				if err == nil {
					if old {
						t.Fatal("a complete swap reads as the old log")
					}
					if stop < 4 {
						t.Fatalf("only %d steps", stop)
					}
					return
				}
				if stop > 10000 {
					t.Fatal("too many steps")
				}
			}
		})
	}
}

// TestClean_CompressedAndLarge cleans batches of every codec, recompressed with their
// codec, and a 1 MiB record.
func TestClean_CompressedAndLarge(t *testing.T) {
	for codec := int8(0); codec <= 4; codec++ {
		t.Run(fmt.Sprint(codec), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Compacted = true
			l, dir := openTestLog(t, cfg, OpenOptions{})
			big := bytes.Repeat([]byte("x"), 1<<20)
			for i := 0; i < 20; i++ {
				recs := []kv{{[]byte("a"), []byte(fmt.Sprint("a", i))}, {[]byte(fmt.Sprint("u", i)), []byte("once")}, {[]byte("b"), []byte(fmt.Sprint("b", i))}}
				if i == 3 {
					recs = append(recs, kv{[]byte("big"), big})
				}
				if _, err := l.AppendAsLeader(keyedBatch(t, recs, codec, int64(i), -1, 0), 0); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
			cleanAll(t, l, 0, l.LogEndOffset(), CleanOptions{MaxMapBytes: 1 << 20, Decompress: decompressForTest, Compress: compressorForTest})
			batches, got := consumeAll(t, l)
			keys := map[string]string{}
			for _, r := range got {
				if _, dup := keys[r.key]; dup {
					t.Fatalf("key %s twice", r.key)
				}
				keys[r.key] = r.value
			}
			if keys["a"] != "a19" || keys["b"] != "b19" || len(keys["big"]) != 1<<20 || len(keys) != 23 {
				t.Fatalf("latest values wrong: a=%q b=%q big=%d keys=%d", keys["a"], keys["b"], len(keys["big"]), len(keys))
			}
			for _, b := range batches {
				if b.NumRecords > 0 && int8(b.Attributes&7) != codec {
					t.Fatalf("batch at %d has codec %d, want %d", b.FirstOffset, b.Attributes&7, codec)
				}
			}
			checkSegmentFiles(t, dir)
		})
	}
}

// TestClean_ActiveSegmentAndHead: nothing at or above the uncleanable offset or in the
// active segment changes.
func TestClean_ActiveSegmentAndHead(t *testing.T) {
	cfg := smallConfig()
	cfg.Compacted = true
	l, _ := openTestLog(t, cfg, OpenOptions{})
	for i := 0; i < 50; i++ {
		l.AppendAsLeader(keyedBatch(t, []kv{{[]byte("k"), []byte(fmt.Sprint(i))}}, 0, int64(i), -1, 0), 0)
	}
	// Everything is in the active segment: nothing to clean.
	if p, err := l.PrepareClean(CleanOptions{UncleanableOffset: l.LogEndOffset(), MaxMapBytes: 1 << 20}); p != nil || err != nil {
		t.Fatalf("active segment cleaned: %v %v", p, err)
	}
	if !strings.Contains(ErrCleanAborted.Error(), "abandoned") {
		t.Fatal(ErrCleanAborted)
	}
}
