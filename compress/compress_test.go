package compress

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/snappy/xerial"
	"github.com/twmb/franz-go/pkg/kgo"
)

// testValue is size bytes, compressible (repeated JSON) or not (ChaCha8 noise).
func testValue(size int, compressible bool, seed int) []byte {
	if compressible {
		line := fmt.Appendf(nil, `{"id":%d,"status":"shipped"},`, seed)
		return bytes.Repeat(line, size/len(line)+1)[:size]
	}
	value := make([]byte, size)
	var key [32]byte
	key[0] = byte(seed)
	_, _ = rand.NewChaCha8(key).Read(value)
	return value
}

// decompressBoth decompresses with Readers and, to compare, with kgo's decompressor:
// what the writers produce every Kafka client reads.
func decompressBoth(t *testing.T, codec int8, b []byte) []byte {
	t.Helper()
	got, err := NewReaders(64<<20).Decompress(codec, b)
	if err != nil {
		t.Fatalf("%s: %v", Name(codec), err)
	}
	viaKgo, err := kgo.DefaultDecompressor().Decompress(b, kgo.CompressionCodecType(codec))
	if err != nil || !bytes.Equal(viaKgo, got) {
		t.Fatalf("%s: kgo reads it differently: %v", Name(codec), err)
	}
	return got
}

// Every codec at several levels round-trips through Writers and Readers, and kgo reads
// what the writers write.
func TestRoundTripEveryCodec(t *testing.T) {
	var w Writers
	for _, codec := range []int8{Gzip, Snappy, LZ4, Zstd} {
		for _, opts := range []Options{DefaultOptions, {GzipLevel: 1, ZstdLevel: 1}, {GzipLevel: 9, ZstdLevel: 19}, {GzipLevel: 42, ZstdLevel: -7}} {
			for _, n := range []int{0, 1, 1000, 200 << 10} {
				in := testValue(n, n%2 == 0, n)
				out, err := w.Compress(codec, opts, in)
				if err != nil {
					t.Fatalf("%s %+v: %v", Name(codec), opts, err)
				}
				if got := decompressBoth(t, codec, out); !bytes.Equal(got, in) {
					t.Fatalf("%s %+v, %d bytes: decoded differently", Name(codec), opts, n)
				}
			}
		}
	}
	if _, err := w.Compress(7, DefaultOptions, []byte("x")); err == nil {
		t.Fatal("codec 7 compressed")
	}
}

// A bomb (8 MiB of zeros in a few KiB) decompresses to ErrTooLarge under a 1 MiB limit
// with every codec, and exactly the limit is still allowed.
func TestDecompressStopsAtTheLimit(t *testing.T) {
	var w Writers
	zeros := make([]byte, 8<<20)
	for _, codec := range []int8{Gzip, Snappy, LZ4, Zstd} {
		bomb, err := w.Compress(codec, DefaultOptions, zeros)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := NewReaders(1<<20).Decompress(codec, bomb); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s bomb of %d bytes: %v, want ErrTooLarge", Name(codec), len(bomb), err)
		}
		exact, _ := w.Compress(codec, DefaultOptions, zeros[:1<<20])
		if got, err := NewReaders(1<<20).Decompress(codec, exact); err != nil || len(got) != 1<<20 {
			t.Errorf("%s of exactly the limit: %d bytes, %v", Name(codec), len(got), err)
		}
	}
}

// TestXerialWriter: the snappy writer's xerial framing, in blocks of 32 KiB, is read by
// the strict reader, kgo and klauspost's xerial decoder alike.
func TestXerialWriter(t *testing.T) {
	for _, n := range []int{1, xerialBlockSize - 1, xerialBlockSize, xerialBlockSize + 1, 5*xerialBlockSize + 17} {
		in := testValue(n, n%2 == 0, n)
		var out bytes.Buffer
		w := &xerialWriter{}
		w.Reset(&out)
		for p := in; len(p) > 0; { // uneven writes
			k := min(len(p), 1000+len(p)%7777)
			if _, err := w.Write(p[:k]); err != nil {
				t.Fatal(err)
			}
			p = p[k:]
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		b := out.Bytes()
		if !bytes.HasPrefix(b, xerialMagicHeader) {
			t.Fatalf("%d bytes: no xerial header", n)
		}
		blocks := 0
		for rest := b[len(xerialMagicHeader):]; len(rest) > 0; blocks++ {
			rest = rest[4+binary.BigEndian.Uint32(rest):]
		}
		if want := (n + xerialBlockSize - 1) / xerialBlockSize; blocks != want {
			t.Errorf("%d bytes in %d blocks, expected %d", n, blocks, want)
		}
		if got := decompressBoth(t, Snappy, b); !bytes.Equal(got, in) {
			t.Fatalf("%d bytes: decoded differently", n)
		}
		if got, err := xerial.Decode(b); err != nil || !bytes.Equal(got, in) {
			t.Fatalf("%d bytes: klauspost's xerial decoder: %v", n, err)
		}
	}
}

// FuzzDecompress: whatever the bytes, Decompress with any codec returns an error or at
// most the limit's bytes, never a panic; what it accepts kgo decodes the same.
//
//	go test -run XXX -fuzz FuzzDecompress -fuzztime 20000x ./compress/
func FuzzDecompress(f *testing.F) {
	var w Writers
	for _, codec := range []int8{Gzip, Snappy, LZ4, Zstd} {
		for _, n := range []int{1, 3000, 70000} {
			b, err := w.Compress(codec, DefaultOptions, testValue(n, n%2 == 1, n))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b, uint8(codec))
		}
	}
	const limit = 256 << 10
	r := NewReaders(limit)
	f.Fuzz(func(t *testing.T, b []byte, codec uint8) {
		c := int8(codec % 6) // 5 is unknown
		out, err := r.Decompress(c, b)
		if err != nil {
			return
		}
		if len(out) > limit {
			t.Fatalf("%s: %d bytes past the %d-byte limit", Name(c), len(out), limit)
		}
	})
}
