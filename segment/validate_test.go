package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/petrel-broker/petrel/compress"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// codecNames are the batch codecs by attribute value.
var codecNames = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// vCompress is raw compressed whole with codec at its default level (raw for none).
func vCompress(tb testing.TB, raw []byte, codec int8) []byte {
	tb.Helper()
	if codec == 0 {
		return raw
	}
	out, err := new(compress.Writers).Compress(codec, compress.DefaultOptions, raw)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// vSection is n keyed records with values of size bytes, repetitive text when
// compressible, pseudo-random otherwise.
func vSection(n, size int, compressible bool, seed int) []byte {
	var recs []rcRecord
	state := uint64(seed)*0x9e3779b97f4a7c15 + 1
	for i := range n {
		value := bytes.Repeat(fmt.Appendf(nil, `{"id":%d,"city":"Berlin"},`, seed*n+i), size/24+1)[:size]
		if !compressible {
			for j := range value {
				state ^= state << 13
				state ^= state >> 7
				state ^= state << 17
				value[j] = byte(state)
			}
		}
		recs = append(recs, rcRecord{offsetDelta: int64(i), key: fmt.Appendf(nil, "key-%d", i), value: value,
			headers: []rcHeader{{key: []byte("h"), value: []byte("v")}}})
	}
	return section(recs...)
}

// vBomb is count valid records whose values are each size zero bytes: they decompress
// far past what their compressed size suggests.
func vBomb(count, size int) []byte {
	recs := make([]rcRecord, count)
	for i := range recs {
		recs[i] = rcRecord{offsetDelta: int64(i), value: make([]byte, size)}
	}
	return section(recs...)
}

// kgoDecompress is section decompressed by kgo (an independent implementation).
func kgoDecompress(section []byte, codec int8) ([]byte, error) {
	if codec == 0 {
		return section, nil
	}
	return kgo.DefaultDecompressor().Decompress(section, kgo.CompressionCodecType(codec))
}

// TestRecordValidatorBoundedAllocation: validating a bomb in each codec allocates far
// less than it would decompress to, and is refused.
func TestRecordValidatorBoundedAllocation(t *testing.T) {
	limit, records := int64(64<<20), int32(256)
	if underRace {
		// The same ratio, smaller: compressing 256 MiB under -race takes minutes.
		limit, records = 4<<20, 16
	}
	v := NewRecordValidator(limit)
	for codec := int8(1); codec < 5; codec++ {
		t.Run(codecNames[codec], func(t *testing.T) {
			// records of 1 MiB of zeros: four times the limit.
			batch := rcBatch(vCompress(t, vBomb(int(records), 1<<20), codec), records, codec)
			if err := v.Check(batch, false); !errors.Is(err, ErrRecordsTooLarge) {
				t.Fatalf("bomb of %d bytes: %v", len(batch), err)
			}
			if underRace {
				return // allocation totals say nothing under -race (race_on_test.go)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			const rounds = 3
			for range rounds {
				if err := v.Check(batch, false); !errors.Is(err, ErrRecordsTooLarge) {
					t.Fatal(err)
				}
			}
			runtime.ReadMemStats(&after)
			if per := (after.TotalAlloc - before.TotalAlloc) / rounds; per > 16<<20 {
				t.Fatalf("%d bytes allocated per check of a %d-byte bomb", per, len(batch))
			}
		})
	}
}

// TestRecordValidatorCompactedNeedsKeys: in a compacted topic a record without a key
// is a RecordErrors naming it (INVALID_RECORD); elsewhere it is accepted.
func TestRecordValidatorCompactedNeedsKeys(t *testing.T) {
	v := NewRecordValidator(0)
	batch := rcBatch(section(good(0), rcRecord{offsetDelta: 1, value: []byte("v")}, good(2)), 3, 0)
	if err := v.Check(batch, false); err != nil {
		t.Fatalf("not compacted: %v", err)
	}
	var re *RecordErrors
	if err := v.Check(batch, true); !errors.As(err, &re) || !errors.Is(err, ErrInvalidRecord) || re.Total != 1 || len(re.Indexes) != 1 || re.Indexes[0] != 1 {
		t.Fatalf("compacted: %v", err)
	}
}

// TestRecompressBoundedAllocation: rewriting a bomb in each codec allocates far less
// than it decompresses to, whatever the target: the walk stops at the decompression
// limit and the output at max.message.bytes.
func TestRecompressBoundedAllocation(t *testing.T) {
	v := NewRecordValidator(4 << 20)
	for codec := int8(1); codec < 5; codec++ {
		// 16 records of 512 KiB of zeros: 8 MiB, twice the limit.
		batch := rcBatch(vCompress(t, vBomb(16, 512<<10), codec), 16, codec)
		for _, target := range []string{"uncompressed", "gzip", "snappy", "lz4", "zstd"} {
			if CompressionCodecs[target] == codec {
				continue
			}
			t.Run(codecNames[codec]+"-to-"+target, func(t *testing.T) {
				tc := Compression{Codec: CompressionCodecs[target], Opts: compress.DefaultOptions}
				rewrite := func() {
					if _, _, err := v.Recompress(batch, false, tc, 1<<20); !errors.Is(err, ErrRecordsTooLarge) {
						t.Fatalf("bomb of %d bytes: %v", len(batch), err)
					}
				}
				if underRace {
					rewrite()
					return // the pools drop writers at random: the totals say nothing
				}
				// A collection empties the pools (two drop what they hold), and one
				// decoder allocated again is 2 MiB: with collections off while measured,
				// the totals are the rewrites' own, whenever the collector would run.
				defer debug.SetGCPercent(debug.SetGCPercent(-1))
				rewrite() // the pools fill
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				const rounds = 3
				for range rounds {
					rewrite()
				}
				runtime.ReadMemStats(&after)
				per := (after.TotalAlloc - before.TotalAlloc) / rounds
				if per > 2<<20 {
					t.Fatalf("%d bytes allocated per rewrite of a %d-byte bomb", per, len(batch))
				}
				t.Logf("%d bytes allocated per rewrite", per)
			})
		}
	}
}

// TestRecompressLevels: compression.gzip.level and compression.zstd.level reach the
// writers (a lower level compresses less), and the records stay as they were.
func TestRecompressLevels(t *testing.T) {
	v := NewRecordValidator(64 << 20)
	records := vSection(200, 500, true, 3)
	batch := rcBatch(records, 200, 0)
	size := func(tc Compression) int {
		out, release, err := v.Recompress(batch, false, tc, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		if got, err := kgoDecompress(out[BatchHeaderSize:], tc.Codec); err != nil || !bytes.Equal(got, records) {
			t.Fatalf("%+v: the records changed: %v", tc, err)
		}
		return len(out)
	}
	gzip1, gzip9 := size(Compression{Codec: 1, Opts: compress.Options{GzipLevel: 1}}), size(Compression{Codec: 1, Opts: compress.Options{GzipLevel: 9}})
	zstdFast, zstdBest := size(Compression{Codec: 4, Opts: compress.Options{ZstdLevel: -5}}), size(Compression{Codec: 4, Opts: compress.Options{ZstdLevel: 19}})
	if gzip9 >= gzip1 || zstdBest >= zstdFast {
		t.Errorf("gzip level 1: %d bytes, level 9: %d; zstd fastest: %d, best: %d", gzip1, gzip9, zstdFast, zstdBest)
	}
}

// wrapsSentinel reports whether err is one of the record walk's refusals.
func wrapsSentinel(err error) bool {
	return errors.Is(err, ErrInvalidRecord) || errors.Is(err, ErrRecordsTooLarge) || errors.Is(err, ErrUndecodableRecords)
}

// FuzzRecordValidator: the record walk over compressed (and uncompressed) batches never
// panics, refuses with one of this package's sentinels, and accepts only batches that
// kgo decompresses and kmsg decodes into the records the header claims. Seeds are valid
// batches in every codec; the fuzzer mutates the compressed bytes, the codec and the
// record count. Run with
//
//	go test -run XXX -fuzz FuzzRecordValidator -fuzztime 20000x ./segment/
func FuzzRecordValidator(f *testing.F) {
	for codec := int8(0); codec < 5; codec++ {
		for i, n := range []int{1, 3, 40} {
			f.Add(vCompress(f, vSection(n, 10+i*200, i%2 == 0, i), codec), uint8(codec), int32(n))
		}
		f.Add(vCompress(f, vBomb(8, 200<<10), codec), uint8(codec), int32(8))
	}
	v := NewRecordValidator(1 << 20)
	f.Fuzz(func(t *testing.T, records []byte, codec uint8, count int32) {
		codec %= 5
		if count < 1 {
			count = 1 // the header checks refuse the rest before the walk
		}
		err := v.Check(rcBatch(records, count, int8(codec)), false)
		if err != nil {
			if !wrapsSentinel(err) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		raw, err := kgoDecompress(records, int8(codec))
		if err != nil {
			t.Fatalf("accepted, but kgo cannot decompress it: %v", err)
		}
		if codec != 0 && len(raw) > 1<<20 { // uncompressed batches are bounded by max.message.bytes
			t.Fatalf("accepted %d decompressed bytes with a limit of %d", len(raw), 1<<20)
		}
		for i := int32(0); i < count; i++ {
			length, n := binary.Varint(raw)
			if n <= 0 || length < 0 || int64(len(raw)-n) < length {
				t.Fatalf("accepted, but record %d has a bad length", i)
			}
			var r kmsg.Record
			if err := r.ReadFrom(raw[:n+int(length)]); err != nil || r.OffsetDelta != i {
				t.Fatalf("accepted, but kmsg decodes record %d as %+v, %v", i, r, err)
			}
			raw = raw[n+int(length):]
		}
		if len(raw) != 0 {
			t.Fatalf("accepted, with %d bytes after the last record", len(raw))
		}
	})
}

// FuzzRecompress: whatever batch the walk accepts, its rewrite with any codec is
// accepted by the walk too and holds the same records section, with the producer's
// header fields; refusals wrap this package's sentinels.
//
//	go test -run XXX -fuzz FuzzRecompress -fuzztime 20000x ./segment/
func FuzzRecompress(f *testing.F) {
	for codec := int8(0); codec < 5; codec++ {
		for i, n := range []int{1, 40} {
			f.Add(vCompress(f, vSection(n, 10+i*2000, i%2 == 0, i), codec), uint8(codec), int32(n), uint8(4-codec))
		}
	}
	v := NewRecordValidator(1 << 20)
	f.Fuzz(func(t *testing.T, records []byte, codec uint8, count int32, target uint8) {
		codec, target = codec%5, target%5
		if count < 1 {
			count = 1
		}
		batch := rcBatch(records, count, int8(codec))
		tc := Compression{Codec: int8(target), Opts: compress.DefaultOptions}
		out, release, err := v.Recompress(bytes.Clone(batch), false, tc, 2<<20)
		if err != nil {
			if !wrapsSentinel(err) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			if v.Check(batch, false) == nil && !errors.Is(err, ErrRecordsTooLarge) {
				t.Fatalf("the walk accepts the batch, its rewrite fails: %v", err)
			}
			return
		}
		defer release()
		h, err := ValidateBatch(out)
		if err != nil || h.Codec() != int8(target) || h.RecordCount != count || h.BaseTimestamp != 1_700_000_000_000 || h.ProducerID != -1 {
			t.Fatalf("rewritten header %+v: %v", h, err)
		}
		if err := v.Check(out, false); err != nil {
			t.Fatalf("the walk refuses the rewrite: %v", err)
		}
		in, err := kgoDecompress(records, int8(codec))
		if err != nil {
			t.Fatalf("accepted, but kgo cannot decompress the input: %v", err)
		}
		got, err := kgoDecompress(out[BatchHeaderSize:], int8(target))
		if err != nil || !bytes.Equal(got, in) {
			t.Fatalf("the rewrite holds other records: %v", err)
		}
	})
}
