package segment

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
)

// FuzzCleanBatch feeds arbitrary records sections, as a stored batch would carry them,
// to the cleaner's decoder and filter: it must refuse or rewrite them, never panic, and
// whatever it writes must be valid stored batches with the input's offsets.
func FuzzCleanBatch(f *testing.F) {
	f.Add([]byte(nil), int32(1), false)
	f.Add(keyedBatch(f, []kv{{[]byte("a"), []byte("1")}, {[]byte("a"), nil}, {nil, []byte("x")}}, 0, 5, 3, 0)[BatchHeaderSize:], int32(3), true)
	f.Fuzz(func(t *testing.T, records []byte, count int32, keep bool) {
		if count < 0 || count > 1000 {
			return
		}
		hb := make([]byte, BatchHeaderSize, BatchHeaderSize+len(records))
		binary.BigEndian.PutUint64(hb[offsetBaseOffset:], 100)
		binary.BigEndian.PutUint32(hb[offsetBatchLength:], uint32(minBatchLength+len(records)))
		hb[offsetMagic] = MagicV2
		binary.BigEndian.PutUint32(hb[offsetLastOffsetDelta:], uint32(max(count, 1)-1))
		binary.BigEndian.PutUint64(hb[offsetProducerID:], ^uint64(0))
		binary.BigEndian.PutUint32(hb[offsetRecordCount:], uint32(count))
		b := append(hb, records...)
		binary.BigEndian.PutUint32(b[offsetCRC:], crc32.Checksum(b[offsetAttributes:], castagnoli))
		h, err := ParseBatchHeader(b)
		if err != nil {
			return
		}
		p := &CleanPlan{offsets: newOffsetMap(1 << 16), endOffset: 1 << 40, nowMs: 1, lastBatchOfProducer: map[int64]int64{}}
		p.offsets.put([]byte("a"), 101)
		out, err := p.filterBatch(nil, b, h, keep)
		if err != nil {
			return
		}
		for len(out) > 0 {
			oh, err := ParseBatchHeader(out)
			if err != nil || oh.Size() > int64(len(out)) {
				t.Fatalf("cleaner wrote a bad batch: %v", err)
			}
			if _, err := ValidateStoredBatch(out[:oh.Size()]); err != nil {
				t.Fatalf("cleaner wrote an invalid batch: %v", err)
			}
			if oh.BaseOffset != h.BaseOffset || oh.LastOffset() != h.LastOffset() {
				t.Fatalf("offsets changed: %d..%d, were %d..%d", oh.BaseOffset, oh.LastOffset(), h.BaseOffset, h.LastOffset())
			}
			out = out[oh.Size():]
		}
	})
}
