package segment

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
)

// FuzzCleanBatch feeds arbitrary records sections, as a stored batch would carry them,
// with any producer id, transactional and control attributes, to the cleaner's decoder
// and filter: it must refuse or rewrite them, never panic, whatever it writes must be
// valid stored batches with the input's offsets, and never an empty batch without a
// producer id.
func FuzzCleanBatch(f *testing.F) {
	f.Add([]byte(nil), int32(1), int8(-1), uint8(0), false)
	f.Add(keyedBatch(f, []kv{{[]byte("a"), []byte("1")}, {[]byte("a"), nil}, {nil, []byte("x")}}, 0, 5, 3, 0)[BatchHeaderSize:], int32(3), int8(3), uint8(0), true)
	f.Add(markerBatch(f, 3, false)[BatchHeaderSize:], int32(1), int8(3), uint8(3), false)
	f.Add(keyedBatch(f, []kv{{[]byte("a"), []byte("1")}}, 0, 5, 3, 0)[BatchHeaderSize:], int32(1), int8(4), uint8(1), true)
	f.Fuzz(func(t *testing.T, records []byte, count int32, pid int8, kind uint8, last bool) {
		if count < 0 || count > 1000 {
			return
		}
		attrs := uint16(0)
		if kind&1 != 0 {
			attrs |= attributeTransactional
		}
		if kind&2 != 0 {
			attrs |= attributeControl
		}
		if kind&4 != 0 {
			attrs |= attributeDeleteHorizon
		}
		hb := make([]byte, BatchHeaderSize, BatchHeaderSize+len(records))
		binary.BigEndian.PutUint64(hb[offsetBaseOffset:], 100)
		binary.BigEndian.PutUint32(hb[offsetBatchLength:], uint32(minBatchLength+len(records)))
		hb[offsetMagic] = MagicV2
		binary.BigEndian.PutUint32(hb[offsetLastOffsetDelta:], uint32(max(count, 1)-1))
		binary.BigEndian.PutUint16(hb[offsetAttributes:], attrs)
		binary.BigEndian.PutUint64(hb[offsetProducerID:], uint64(int64(pid)))
		binary.BigEndian.PutUint32(hb[offsetRecordCount:], uint32(count))
		b := append(hb, records...)
		binary.BigEndian.PutUint32(b[offsetCRC:], crc32.Checksum(b[offsetAttributes:], castagnoli))
		h, err := ParseBatchHeader(b)
		if err != nil {
			return
		}
		if h.Control() {
			h.ControlType, h.ControlCoordinatorEpoch = controlRecord(b[BatchHeaderSize:])
		}
		producers := map[int64]ProducerLastRecord{}
		if last {
			producers[int64(pid)] = ProducerLastRecord{LastDataOffset: h.LastOffset()}
		}
		p := &CleanPlan{offsets: newOffsetMap(1 << 16), endOffset: 1 << 40, nowMs: 1, producers: producers, droppedMarkers: map[int64]bool{}}
		p.offsets.put([]byte("a"), 101)
		walker := newTxnWalker([]AbortedTxn{{ProducerID: 4, FirstOffset: 50, LastOffset: 200}}, 0)
		out, err := p.filterBatch(nil, b, h, walker)
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
			if oh.RecordCount == 0 && oh.ProducerID < 0 {
				t.Fatalf("cleaner wrote an empty batch without a producer id")
			}
			if oh.BaseOffset != h.BaseOffset || oh.LastOffset() != h.LastOffset() {
				t.Fatalf("offsets changed: %d..%d, were %d..%d", oh.BaseOffset, oh.LastOffset(), h.BaseOffset, h.LastOffset())
			}
			out = out[oh.Size():]
		}
	})
}
