package broker

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzRecordValidator: the record walk over compressed (and uncompressed) batches never
// panics, refuses with one of segment's sentinels, and accepts only batches that kgo
// decompresses and kmsg decodes into the records the header claims. Seeds are valid
// kmsg batches in every codec; the fuzzer mutates the compressed bytes, the codec and
// the record count. Run with
//
//	go test -run XXX -fuzz FuzzRecordValidator -fuzztime 20000x ./broker/
func FuzzRecordValidator(f *testing.F) {
	for _, c := range rvCodecs {
		for i, n := range []int{1, 3, 40} {
			section := rvGoodSection(n, 10+i*200, i%2 == 0, i)
			f.Add(rvCompress(f, section, c.codec), uint8(c.codec), int32(n))
		}
		f.Add(rvCompress(f, rvBomb(8, 200<<10), c.codec), uint8(c.codec), int32(8))
	}
	v := newRecordValidator(1 << 20)
	dec := kgo.DefaultDecompressor()
	f.Fuzz(func(t *testing.T, section []byte, codec uint8, count int32) {
		codec %= 5
		if count < 1 {
			count = 1 // the header checks refuse the rest before the walk
		}
		batch := rvBatch(section, count, int8(codec))
		err := v.check(batch, false)
		if err != nil {
			if !errors.Is(err, segment.ErrInvalidRecord) && !errors.Is(err, segment.ErrRecordsTooLarge) && !errors.Is(err, segment.ErrUndecodableRecords) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		raw := section
		if codec != 0 {
			if raw, err = dec.Decompress(section, kgo.CompressionCodecType(codec)); err != nil {
				t.Fatalf("accepted, but kgo cannot decompress it: %v", err)
			}
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
