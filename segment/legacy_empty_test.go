package segment

import (
	"encoding/binary"
	"fmt"
	"testing"
)

// legacyLog writes what an older build's cleaner left: groups that each end with an
// empty batch without a producer id (the whole batch's offsets, no records), and a
// producer's empty last batch, which stays.
func legacyLog(t *testing.T) (*Log, string) {
	t.Helper()
	cfg := smallConfig()
	cfg.Compacted = true
	l, dir := openTestLog(t, cfg, OpenOptions{})
	var next int64
	add := func(b []byte) {
		t.Helper()
		h, _ := ParseBatchHeader(b)
		putBaseOffset(b, next)
		next += int64(h.LastOffsetDelta) + 1
		if _, err := l.AppendAsFollower(b); err != nil {
			t.Fatal(err)
		}
	}
	empty := func(pid int64, records int) []byte {
		h, _ := ParseBatchHeader(keyedBatch(t, make([]kv, records), 0, 5, pid, 0))
		return appendEmptyBatch(nil, h)
	}
	for g := 0; g < 3; g++ {
		for i := 0; i < 4; i++ {
			add(keyedBatch(t, []kv{{[]byte(fmt.Sprintf("k%d-%d", g, i)), []byte("v")}}, 0, 5, -1, 0))
		}
		add(empty(-1, 3))
		if g == 1 {
			add(empty(7, 2)) // a producer's last batch: Kafka keeps these
		}
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
	}
	add(keyedBatch(t, []kv{{[]byte("head"), []byte("v")}}, 0, 5, -1, 0))
	return l, dir
}

// TestEmptyBatches_HiddenFromConsumers: a consumer's read of a compacted log never starts
// with or holds an empty batch, with or without a producer id (kafkajs and kafka-python
// cannot read an answer made of them); replicas read every batch.
func TestEmptyBatches_HiddenFromConsumers(t *testing.T) {
	l, _ := legacyLog(t)
	defer l.Close()
	read := func(consumer bool) (batches int, empties int) {
		t.Helper()
		for offset := int64(0); offset < l.LogEndOffset(); {
			read := l.Read
			if consumer {
				read = l.ReadForConsumer
			}
			r, err := read(offset, 200, l.LogEndOffset())
			if err != nil {
				t.Fatal(err)
			}
			b, err := r.Bytes()
			r.Release()
			if err != nil || len(b) == 0 {
				t.Fatalf("read at %d: %d bytes, %v", offset, len(b), err)
			}
			for len(b) > 0 {
				h, _ := ParseBatchHeader(b)
				batches++
				if h.RecordCount == 0 {
					empties++
				}
				offset = h.NextOffset()
				b = b[h.Size():]
			}
		}
		return batches, empties
	}
	if all, empties := read(false); empties != 4 || all != 17 {
		t.Fatalf("replica read %d batches, %d empty; want 17, 4", all, empties)
	}
	if all, empties := read(true); empties != 0 || all != 13 {
		t.Fatalf("consumer read %d batches, %d empty; want 13, 0", all, empties)
	}
	// A log no longer compacted hides them while marked.
	cfg := l.Config()
	cfg.Compacted = false
	l.SetConfig(cfg)
	if _, empties := read(true); empties != 4 {
		t.Fatalf("unmarked, not compacted: consumer read %d empty batches, want 4", empties)
	}
	l.SetHideEmptyBatches(true)
	if _, empties := read(true); empties != 0 {
		t.Fatalf("marked: consumer read %d empty batches, want 0", empties)
	}
}

// TestLegacyEmptyBatches_RepairedByAnyPass: a plan finds them, and a pass with nothing
// dirty (the whole log already cleaned) removes them and keeps the producer's.
func TestLegacyEmptyBatches_RepairedByAnyPass(t *testing.T) {
	l, dir := legacyLog(t)
	defer l.Close()
	end := l.Segments()[len(l.Segments())-1].BaseOffset
	opts := CleanOptions{FirstDirtyOffset: end, UncleanableOffset: end, MaxMapBytes: 1 << 20}
	p, err := l.PrepareClean(opts)
	if err != nil || p == nil {
		t.Fatal(p, err)
	}
	if found, err := p.HasLegacyEmptyBatches(); err != nil || !found {
		t.Fatalf("legacy empty batches not found: %v %v", found, err)
	}
	if err := p.Build(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.CommitClean(p); err != nil {
		t.Fatal(err)
	}
	checkSegmentFiles(t, dir)
	producers := 0
	for _, b := range readAll(t, l) {
		h, _ := ParseBatchHeader(b)
		if legacyEmpty(h) {
			t.Fatalf("legacy empty batch at %d survived the pass", h.BaseOffset)
		}
		if h.ProducerID == 7 && h.RecordCount == 0 {
			producers++
		}
	}
	if producers != 1 {
		t.Fatalf("the producer's empty last batch: %d, want 1", producers)
	}
	_, recs := consumeAll(t, l)
	if len(recs) != 13 {
		t.Fatalf("%d records after the repair, want 13", len(recs))
	}
	p, err = l.PrepareClean(opts)
	if err != nil || p == nil {
		t.Fatal(p, err)
	}
	defer p.Abandon()
	if found, err := p.HasLegacyEmptyBatches(); err != nil || found {
		t.Fatalf("after the repair: found %v, %v", found, err)
	}
}

// putBaseOffset sets a batch's base offset (outside the CRC).
func putBaseOffset(b []byte, offset int64) {
	binary.BigEndian.PutUint64(b[offsetBaseOffset:], uint64(offset))
}
