package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestAppendAsLeaderAssignsOffsetsAndEpoch(t *testing.T) {
	l, _ := openTestLog(t, smallConfig(), OpenOptions{})
	// Several batches in one call.
	var buf []byte
	for i := 0; i < 3; i++ {
		buf = append(buf, makeBatch(t, batchSpec{records: 4, valueSize: 10, baseTimestamp: 100 + int64(i)})...)
	}
	info, err := l.AppendAsLeader(buf, 7)
	if err != nil {
		t.Fatal(err)
	}
	if info.FirstOffset != 0 || info.LastOffset != 11 || info.Batches != 3 || info.Records != 12 || info.Position != 0 {
		t.Fatalf("append info %+v", info)
	}
	if info.MaxTimestamp != 102 || info.OffsetOfMaxTimestamp != 11 {
		t.Fatalf("max timestamp %d at %d", info.MaxTimestamp, info.OffsetOfMaxTimestamp)
	}
	info, err = l.AppendAsLeader(makeBatch(t, batchSpec{records: 2, valueSize: 10}), 8)
	if err != nil {
		t.Fatal(err)
	}
	if info.FirstOffset != 12 || info.LastOffset != 13 || info.Position != int64(len(buf)) {
		t.Fatalf("second append info %+v", info)
	}
	got := readAll(t, l)
	wantBases := []int64{0, 4, 8, 12}
	wantEpochs := []int32{7, 7, 7, 8}
	for i, b := range got {
		h, err := ValidateBatch(b)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if h.BaseOffset != wantBases[i] || h.PartitionLeaderEpoch != wantEpochs[i] {
			t.Fatalf("batch %d: base %d epoch %d", i, h.BaseOffset, h.PartitionLeaderEpoch)
		}
	}
	if e := l.LeaderEpochs().Entries(); len(e) != 2 || e[0] != (EpochEntry{7, 0}) || e[1] != (EpochEntry{8, 12}) {
		t.Fatalf("epoch entries %v", e)
	}
}

func TestAppendRejectsBadBatches(t *testing.T) {
	good := makeBatch(t, batchSpec{records: 3, valueSize: 20})
	mutate := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	tests := []struct {
		name string
		buf  []byte
		want error
	}{
		{"empty", nil, ErrInvalidBatch},
		{"short header", good[:40], ErrInvalidBatch},
		{"magic 1", mutate(func(b []byte) []byte { b[offsetMagic] = 1; return b }), ErrUnsupportedMagic},
		{"magic 0", mutate(func(b []byte) []byte { b[offsetMagic] = 0; return b }), ErrUnsupportedMagic},
		{"torn", good[:len(good)-1], ErrInvalidBatch},
		{"trailing bytes", append(append([]byte(nil), good...), 1, 2, 3), ErrInvalidBatch},
		{"crc", mutate(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), ErrCorruptBatch},
		{"count mismatch", mutate(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[offsetRecordCount:], 5)
			return b
		}), ErrInvalidBatch},
		{"zero records", mutate(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[offsetRecordCount:], 0)
			binary.BigEndian.PutUint32(b[offsetLastOffsetDelta:], math.MaxUint32)
			return b
		}), ErrInvalidBatch},
		{"length too small", mutate(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[offsetBatchLength:], 10)
			return b
		}), ErrInvalidBatch},
		{"second batch corrupt", append(append([]byte(nil), good...), mutate(func(b []byte) []byte { b[70] ^= 0x40; return b })...), ErrCorruptBatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, _ := openTestLog(t, smallConfig(), OpenOptions{})
			if _, err := l.AppendAsLeader(tt.buf, 1); !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if l.LogEndOffset() != 0 || l.Size() != 0 {
				t.Fatalf("rejected append changed the log: LEO %d size %d", l.LogEndOffset(), l.Size())
			}
		})
		// The produce handler's path checked the CRC already; every structural check
		// still holds there.
		if tt.want == ErrCorruptBatch {
			continue
		}
		t.Run(tt.name+"/validated", func(t *testing.T) {
			l, _ := openTestLog(t, smallConfig(), OpenOptions{})
			if _, err := l.AppendValidatedAsLeader(tt.buf, 1); !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if l.LogEndOffset() != 0 || l.Size() != 0 {
				t.Fatalf("rejected append changed the log: LEO %d size %d", l.LogEndOffset(), l.Size())
			}
		})
	}
}

func TestAppendAsFollower(t *testing.T) {
	leader, _ := openTestLog(t, smallConfig(), OpenOptions{})
	stored := appendN(t, leader, 5, batchSpec{records: 3, valueSize: 50}, 2)
	follower, _ := openTestLog(t, smallConfig(), OpenOptions{})
	if _, err := follower.AppendAsFollower(bytes.Join(stored[:3], nil)); err != nil {
		t.Fatal(err)
	}
	// A gap, a repeat and a non-contiguous pair are refused.
	for name, buf := range map[string][]byte{
		"gap":            stored[4],
		"repeat":         stored[2],
		"non-contiguous": bytes.Join([][]byte{stored[3], stored[3]}, nil),
	} {
		if _, err := follower.AppendAsFollower(buf); !errors.Is(err, ErrInvalidBatch) {
			t.Fatalf("%s: error %v, want ErrInvalidBatch", name, err)
		}
	}
	if _, err := follower.AppendAsFollower(bytes.Join(stored[3:], nil)); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, follower)
	for i := range stored {
		if !bytes.Equal(got[i], stored[i]) {
			t.Fatalf("follower batch %d differs from the leader's", i)
		}
	}
	if e := follower.LeaderEpochs().Entries(); len(e) != 1 || e[0] != (EpochEntry{2, 0}) {
		t.Fatalf("follower epochs %v", e)
	}
}

func TestReadRules(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 2000
	l, _ := openTestLog(t, cfg, OpenOptions{})
	// Batches of 5 records, about 330 bytes: several per segment.
	stored := appendN(t, l, 20, batchSpec{records: 5, valueSize: 40}, 1)
	size := int64(len(stored[0]))
	leo := l.LogEndOffset()
	if leo != 100 || len(l.Segments()) < 3 {
		t.Fatalf("LEO %d, %d segments", leo, len(l.Segments()))
	}
	tests := []struct {
		name      string
		offset    int64
		maxBytes  int
		upTo      int64
		wantFirst int64
		wantLast  int64
		wantErr   error
	}{
		{"first batch exactly", 0, int(size), leo, 0, 4, nil},
		{"mid batch offset returns the whole batch", 3, int(size), leo, 0, 4, nil},
		{"maxBytes below one batch still returns one", 7, 1, leo, 5, 9, nil},
		{"two batches fit", 5, int(2 * size), leo, 5, 14, nil},
		{"upTo excludes a batch it cuts", 0, 1 << 20, 7, 0, 4, nil},
		{"upTo at a batch boundary", 0, 1 << 20, 10, 0, 9, nil},
		{"offset at upTo is empty", 10, 1 << 20, 10, -1, -1, nil},
		{"upTo inside the first batch is empty", 0, 1 << 20, 3, -1, -1, nil},
		{"at the log end is empty", leo, 1 << 20, leo, -1, -1, nil},
		{"past the log end", leo + 1, 1 << 20, leo + 1, -1, -1, ErrOffsetOutOfRange},
		{"negative", -1, 1 << 20, leo, -1, -1, ErrOffsetOutOfRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := l.Read(tt.offset, tt.maxBytes, tt.upTo)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if r.FirstOffset != tt.wantFirst || r.LastOffset != tt.wantLast {
				t.Fatalf("read [%d, %d], want [%d, %d]", r.FirstOffset, r.LastOffset, tt.wantFirst, tt.wantLast)
			}
			b, err := r.Bytes()
			if err != nil || int64(len(b)) != r.Size || b == nil {
				t.Fatalf("bytes: %v, %d bytes of %d", err, len(b), r.Size)
			}
		})
	}
	// A read never spans two segments; reading on crosses each boundary.
	segs := l.Segments()
	r, err := l.Read(segs[1].BaseOffset-1, 1<<20, leo)
	if err != nil {
		t.Fatal(err)
	}
	if r.LastOffset != segs[1].BaseOffset-1 {
		t.Fatalf("read from the end of segment 0 ran to %d, segment 1 starts at %d", r.LastOffset, segs[1].BaseOffset)
	}
	r, err = l.Read(segs[1].BaseOffset, 1<<20, leo)
	if err != nil || r.FirstOffset != segs[1].BaseOffset || r.LastOffset != segs[1].NextOffset-1 {
		t.Fatalf("read of segment 1: %+v, %v", r, err)
	}
	// Every offset reads from the batch that holds it.
	for off := int64(0); off < leo; off++ {
		r, err := l.Read(off, 1, leo)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := r.Bytes()
		if want := stored[off/5]; !bytes.Equal(b, want) {
			t.Fatalf("offset %d read batch [%d, %d]", off, r.FirstOffset, r.LastOffset)
		}
	}
	// Reading after the log start moved.
	if err := l.AdvanceLogStartOffset(12); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Read(11, 1, leo); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below the log start: %v", err)
	}
	if r, err := l.Read(12, 1, leo); err != nil || r.FirstOffset != 10 {
		t.Fatalf("read at the log start inside a batch: %+v %v", r, err)
	}
}

func TestIndexLookupAtEveryEntry(t *testing.T) {
	cfg := smallConfig()
	cfg.IndexIntervalBytes = 500
	cfg.SegmentBytes = 1 << 20
	l, _ := openTestLog(t, cfg, OpenOptions{})
	stored := appendN(t, l, 200, batchSpec{records: 3, valueSize: 60, baseTimestamp: 1000, tsStep: 10}, 1)
	_ = stored
	s := l.active()
	if s.offsetIndex.entries < 20 {
		t.Fatalf("only %d index entries", s.offsetIndex.entries)
	}
	check := func(t *testing.T, s *segment) {
		var hb [BatchHeaderSize]byte
		if err := s.use(); err != nil { // open under -segment.filecache
			t.Fatal(err)
		}
		defer l.release()
		for i := 0; i < s.offsetIndex.entries; i++ {
			e := s.offsetIndex.at(i)
			h, err := s.readHeaderAt(e.position, &hb)
			if err != nil {
				t.Fatalf("entry %d: %v", i, err)
			}
			if h.LastOffset() != e.offset {
				t.Fatalf("entry %d: offset %d, batch at its position ends at %d", i, e.offset, h.LastOffset())
			}
			if got := s.offsetIndex.lookup(e.offset); got != e {
				t.Fatalf("lookup(%d) = %+v, want %+v", e.offset, got, e)
			}
			if i > 0 {
				if got := s.offsetIndex.lookup(e.offset - 1); got != s.offsetIndex.at(i-1) {
					t.Fatalf("lookup(%d) = %+v, want the previous entry", e.offset-1, got)
				}
			}
			pos, bh, ok, err := s.translateOffset(e.offset)
			if err != nil || !ok || pos != e.position || bh.LastOffset() != e.offset {
				t.Fatalf("translate(%d): pos %d ok %v err %v", e.offset, pos, ok, err)
			}
		}
		for i := 0; i < s.timeIndex.entries; i++ {
			e := s.timeIndex.at(i)
			if got := s.timeIndex.lookup(e.timestamp); got != e.offset {
				t.Fatalf("time lookup(%d) = %d, want %d", e.timestamp, got, e.offset)
			}
			if i > 0 && s.timeIndex.at(i-1).timestamp >= e.timestamp {
				t.Fatalf("time index not increasing at %d", i)
			}
		}
	}
	t.Run("active", func(t *testing.T) { check(t, s) })
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	t.Run("sealed", func(t *testing.T) {
		sealed := l.segments[0]
		if st, _ := os.Stat(sealed.offsetIndex.filePath()); st.Size() != int64(sealed.offsetIndex.entries*offsetIndexEntrySize) {
			t.Fatalf("sealed index not trimmed: %d bytes for %d entries", st.Size(), sealed.offsetIndex.entries)
		}
		check(t, sealed)
	})
	if st, _ := os.Stat(l.active().offsetIndex.filePath()); st.Size() != int64(l.active().offsetIndex.entries*offsetIndexEntrySize) {
		t.Fatalf("active index of %d bytes for %d entries: never preallocated, it holds exactly its entries", st.Size(), l.active().offsetIndex.entries)
	}
}

func TestRollTriggers(t *testing.T) {
	t.Run("segment.bytes", func(t *testing.T) {
		cfg := smallConfig()
		b := makeBatch(t, batchSpec{records: 1, valueSize: 100})
		cfg.SegmentBytes = int64(3 * len(b))
		l, _ := openTestLog(t, cfg, OpenOptions{})
		appendN(t, l, 3, batchSpec{records: 1, valueSize: 100}, 0)
		if n := len(l.Segments()); n != 1 {
			t.Fatalf("%d segments after filling one exactly", n)
		}
		appendN(t, l, 1, batchSpec{records: 1, valueSize: 100}, 0)
		if segs := l.Segments(); len(segs) != 2 || segs[1].BaseOffset != 3 {
			t.Fatalf("segments %+v", segs)
		}
	})
	t.Run("segment.bytes with one oversized append", func(t *testing.T) {
		// A leader refuses such an append (TestAppendLargerThanSegmentRefused); a
		// follower copying a leader with a larger segment.bytes takes it.
		cfg := smallConfig()
		cfg.SegmentBytes = 100
		l, _ := openTestLog(t, cfg, OpenOptions{})
		for i := range 2 {
			b := makeBatch(t, batchSpec{records: 1, valueSize: 500, seed: byte(i)})
			putBaseOffset(b, int64(i))
			if _, err := l.AppendAsFollower(b); err != nil {
				t.Fatal(err)
			}
		}
		if segs := l.Segments(); len(segs) != 2 || segs[0].NextOffset != 1 {
			t.Fatalf("an oversized batch must go alone into a segment: %+v", segs)
		}
	})
	t.Run("segment.ms", func(t *testing.T) {
		cfg := smallConfig()
		cfg.SegmentMs = 1000
		l, _ := openTestLog(t, cfg, OpenOptions{})
		for _, ts := range []int64{5000, 5500, 6000} {
			appendN(t, l, 1, batchSpec{records: 1, valueSize: 10, baseTimestamp: ts}, 0)
		}
		if n := len(l.Segments()); n != 1 {
			t.Fatalf("rolled early: %d segments", n)
		}
		appendN(t, l, 1, batchSpec{records: 1, valueSize: 10, baseTimestamp: 6001}, 0)
		if segs := l.Segments(); len(segs) != 2 || segs[1].BaseOffset != 3 {
			t.Fatalf("segments %+v", segs)
		}
	})
	t.Run("full index", func(t *testing.T) {
		cfg := smallConfig()
		cfg.SegmentIndexBytes = 8 * offsetIndexEntrySize
		cfg.IndexIntervalBytes = 0 // an entry for every batch after the first
		l, _ := openTestLog(t, cfg, OpenOptions{})
		appendN(t, l, 30, batchSpec{records: 1, valueSize: 10, baseTimestamp: 1, tsStep: 1}, 0)
		segs := l.Segments()
		if len(segs) < 3 {
			t.Fatalf("full indexes did not roll: %+v", segs)
		}
		for _, s := range l.segments {
			if s.offsetIndex.entries > s.offsetIndex.maxEntries || s.timeIndex.entries > s.timeIndex.maxEntries {
				t.Fatalf("index overfilled")
			}
		}
		if got := readAll(t, l); len(got) != 30 {
			t.Fatalf("read %d batches", len(got))
		}
	})
	t.Run("relative offset overflow", func(t *testing.T) {
		l, _ := openTestLog(t, smallConfig(), OpenOptions{})
		appendN(t, l, 1, batchSpec{records: 1, valueSize: 10}, 0)
		s := l.active()
		now := time.Now()
		if s.shouldRoll(l.cfg, 10, 1, s.baseOffset+math.MaxInt32, 0, now) {
			t.Fatal("rolled at the largest relative offset")
		}
		if !s.shouldRoll(l.cfg, 10, 1, s.baseOffset+math.MaxInt32+1, 0, now) {
			t.Fatal("did not roll past the largest relative offset")
		}
	})
	t.Run("manual roll of an empty segment is a no-op", func(t *testing.T) {
		l, _ := openTestLog(t, smallConfig(), OpenOptions{})
		if err := l.Roll(); err != nil || len(l.Segments()) != 1 {
			t.Fatalf("roll: %v, %d segments", err, len(l.Segments()))
		}
	})
}

func TestRetention(t *testing.T) {
	spec := batchSpec{records: 2, valueSize: 100}
	batchSize := int64(len(makeBatch(t, spec)))
	newLog := func(t *testing.T, cfg Config, clock *testClock) *Log {
		cfg.SegmentBytes = 2 * batchSize // two batches per segment
		l, _ := openTestLog(t, cfg, OpenOptions{Now: clock.now})
		for i := 0; i < 10; i++ {
			spec.baseTimestamp = int64(1000 * (i + 1)) // batch i has timestamps 1000(i+1)
			appendN(t, l, 1, spec, 0)
		}
		if n := len(l.Segments()); n != 5 {
			t.Fatalf("%d segments", n)
		}
		return l
	}
	t.Run("retention.ms", func(t *testing.T) {
		clock := &testClock{time.UnixMilli(6500)}
		cfg := smallConfig()
		cfg.RetentionMs = 2000
		l := newLog(t, cfg, clock)
		// Segments' largest timestamps: 2000, 4000, 6000, 8000, 10000. At 6500 with 2000 ms
		// retention, the first two are expired.
		res, err := l.EnforceRetention(math.MaxInt64)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.DeletedSegments) != 2 || res.LogStartOffset != 8 || l.LogStartOffset() != 8 {
			t.Fatalf("result %+v, log start %d", res, l.LogStartOffset())
		}
		if _, err := os.Stat(segmentPath(l.Dir(), 0, LogFileSuffix)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("deleted segment file still there: %v", err)
		}
		// The active segment is never deleted, however old.
		clock.advance(time.Hour)
		res, _ = l.EnforceRetention(math.MaxInt64)
		if len(l.Segments()) != 1 || len(res.DeletedSegments) != 2 || l.LogEndOffset() != 20 {
			t.Fatalf("after an hour: %+v, segments %+v", res, l.Segments())
		}
	})
	t.Run("never past the high watermark", func(t *testing.T) {
		clock := &testClock{time.UnixMilli(1 << 50)} // everything is expired
		cfg := smallConfig()
		cfg.RetentionMs = 1
		l := newLog(t, cfg, clock)
		// Offsets below 9 are committed: only the segments [0,4) and [4,8) may go.
		res, err := l.EnforceRetention(9)
		if err != nil || len(res.DeletedSegments) != 2 || l.LogStartOffset() != 8 {
			t.Fatalf("result %+v, log start %d", res, l.LogStartOffset())
		}
	})
	t.Run("retention.ms -1 keeps everything", func(t *testing.T) {
		clock := &testClock{time.UnixMilli(1 << 50)}
		cfg := smallConfig()
		cfg.RetentionMs = -1
		l := newLog(t, cfg, clock)
		if res, _ := l.EnforceRetention(math.MaxInt64); len(res.DeletedSegments) != 0 {
			t.Fatalf("deleted %+v", res)
		}
	})
	t.Run("retention.bytes", func(t *testing.T) {
		clock := &testClock{time.UnixMilli(0)}
		cfg := smallConfig()
		cfg.RetentionBytes = 5 * batchSize // keep at least 5 batches' worth
		l := newLog(t, cfg, clock)
		res, err := l.EnforceRetention(math.MaxInt64)
		if err != nil {
			t.Fatal(err)
		}
		// 10 batches; deleting 2 segments leaves 6 batches, a third would leave 4 < 5.
		if len(res.DeletedSegments) != 2 || l.Size() != 6*batchSize || l.LogStartOffset() != 8 {
			t.Fatalf("result %+v, size %d", res, l.Size())
		}
	})
	t.Run("log start offset", func(t *testing.T) {
		clock := &testClock{time.UnixMilli(0)}
		l := newLog(t, smallConfig(), clock)
		if err := l.AdvanceLogStartOffset(9); err != nil {
			t.Fatal(err)
		}
		// Segments [0,4) and [4,8) are wholly below 9 and deleted; [8,12) holds 9.
		if segs := l.Segments(); segs[0].BaseOffset != 8 || l.LogStartOffset() != 9 {
			t.Fatalf("segments %+v, log start %d", segs, l.LogStartOffset())
		}
		if err := l.AdvanceLogStartOffset(5); err != nil || l.LogStartOffset() != 9 {
			t.Fatalf("moving back: %v, log start %d", err, l.LogStartOffset())
		}
		if err := l.AdvanceLogStartOffset(21); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("past the end: %v", err)
		}
		if err := l.AdvanceLogStartOffset(20); err != nil || l.LogStartOffset() != 20 || len(l.Segments()) != 1 {
			t.Fatalf("to the end: %v, log start %d, segments %+v", err, l.LogStartOffset(), l.Segments())
		}
	})
}

func TestTruncation(t *testing.T) {
	spec := batchSpec{records: 4, valueSize: 60}
	newLog := func(t *testing.T) (*Log, [][]byte, string) {
		cfg := smallConfig()
		cfg.SegmentBytes = 4 * int64(len(makeBatch(t, spec))) // 4 batches = 16 offsets per segment
		cfg.IndexIntervalBytes = 100
		l, dir := openTestLog(t, cfg, OpenOptions{})
		var stored [][]byte
		for epoch := int32(1); epoch <= 3; epoch++ {
			stored = append(stored, appendN(t, l, 4, spec, epoch)...)
		}
		return l, stored, dir
	}
	tests := []struct {
		name     string
		offset   int64
		wantLEO  int64
		segments int
		epochs   []EpochEntry
	}{
		{"at the end is a no-op", 48, 48, 3, []EpochEntry{{1, 0}, {2, 16}, {3, 32}}},
		{"past the end is a no-op", 100, 48, 3, []EpochEntry{{1, 0}, {2, 16}, {3, 32}}},
		{"batch boundary in the active segment", 44, 44, 3, []EpochEntry{{1, 0}, {2, 16}, {3, 32}}},
		{"middle of a batch removes the whole batch", 42, 40, 3, []EpochEntry{{1, 0}, {2, 16}, {3, 32}}},
		{"middle of a closed segment", 21, 20, 2, []EpochEntry{{1, 0}, {2, 16}}},
		{"segment boundary", 32, 32, 2, []EpochEntry{{1, 0}, {2, 16}}},
		{"inside the first batch", 1, 0, 1, nil},
		{"to zero", 0, 0, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, stored, dir := newLog(t)
			leo, err := l.TruncateTo(tt.offset)
			if err != nil {
				t.Fatal(err)
			}
			check := func(l *Log) {
				t.Helper()
				if leo != tt.wantLEO || l.LogEndOffset() != tt.wantLEO || len(l.Segments()) != tt.segments {
					t.Fatalf("LEO %d (returned %d), %d segments; want %d, %d", l.LogEndOffset(), leo, len(l.Segments()), tt.wantLEO, tt.segments)
				}
				got := readAll(t, l)
				if int64(len(got)) != tt.wantLEO/4 {
					t.Fatalf("read %d batches", len(got))
				}
				for i := range got {
					if !bytes.Equal(got[i], stored[i]) {
						t.Fatalf("batch %d differs", i)
					}
				}
				if e := l.LeaderEpochs().Entries(); len(e) != len(tt.epochs) || (len(e) > 0 && e[len(e)-1] != tt.epochs[len(tt.epochs)-1]) {
					t.Fatalf("epochs %v, want %v", e, tt.epochs)
				}
				for _, s := range l.segments {
					if err := s.use(); err != nil { // open under -segment.filecache
						t.Fatal(err)
					}
					last := s.offsetIndex.last()
					if s.offsetIndex.entries > 0 && (last.offset >= s.nextOffset || last.position >= s.size) {
						t.Fatalf("index entry %+v beyond the truncated segment", last)
					}
				}
			}
			check(l)
			// Appending continues at the new end, and everything survives a reopen.
			stored = append(stored[:tt.wantLEO/4], appendN(t, l, 1, spec, 9)...)
			tt.wantLEO += 4
			leo += 4
			tt.epochs = append(tt.epochs, EpochEntry{9, tt.wantLEO - 4})
			if len(l.Segments()) > tt.segments {
				tt.segments = len(l.Segments())
			}
			l2, rep := reopen(t, l, dir, l.Config(), OpenOptions{})
			if rep.Cut != nil {
				t.Fatalf("cut after truncation: %+v", rep.Cut)
			}
			check(l2)
		})
	}
	t.Run("below the log start truncates fully", func(t *testing.T) {
		l, _, _ := newLog(t)
		if err := l.AdvanceLogStartOffset(20); err != nil {
			t.Fatal(err)
		}
		if leo, err := l.TruncateTo(10); err != nil || leo != 10 || l.LogStartOffset() != 10 || l.LogEndOffset() != 10 {
			t.Fatalf("leo %d err %v, log start %d", leo, err, l.LogStartOffset())
		}
	})
	t.Run("fully and start at", func(t *testing.T) {
		l, _, dir := newLog(t)
		if err := l.TruncateFullyAndStartAt(1000); err != nil {
			t.Fatal(err)
		}
		if l.LogStartOffset() != 1000 || l.LogEndOffset() != 1000 || len(l.Segments()) != 1 || len(l.LeaderEpochs().Entries()) != 0 {
			t.Fatalf("log start %d LEO %d segments %+v", l.LogStartOffset(), l.LogEndOffset(), l.Segments())
		}
		if _, err := l.Read(999, 1, 2000); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("read below: %v", err)
		}
		appendN(t, l, 1, spec, 4)
		l2, _ := reopen(t, l, dir, l.Config(), OpenOptions{LogStartOffset: 1000})
		if l2.LogStartOffset() != 1000 || l2.LogEndOffset() != 1004 {
			t.Fatalf("after reopen: log start %d LEO %d", l2.LogStartOffset(), l2.LogEndOffset())
		}
		if entries, _ := filepath.Glob(filepath.Join(dir, "*.log")); len(entries) != 1 {
			t.Fatalf("log files %v", entries)
		}
	})
}

func TestTimeLookupsUncompressed(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 1500
	cfg.IndexIntervalBytes = 200
	l, _ := openTestLog(t, cfg, OpenOptions{})
	// Batch i holds records with timestamps 100i, 100i+10, 100i+20, 100i+30.
	for i := 0; i < 30; i++ {
		appendN(t, l, 1, batchSpec{records: 4, valueSize: 30, baseTimestamp: int64(100 * i), tsStep: 10}, 0)
	}
	if len(l.Segments()) < 3 {
		t.Fatalf("%d segments", len(l.Segments()))
	}
	for _, tt := range []struct {
		ts     int64
		offset int64
		found  bool
	}{
		{0, 0, true}, {5, 1, true}, {10, 1, true}, {31, 4, true}, {1030, 43, true},
		{2930, 119, true}, {2931, 0, false}, {-5, 0, true},
	} {
		got, ok, err := l.OffsetForTimestamp(tt.ts)
		if err != nil || ok != tt.found || (ok && got.Offset != tt.offset) {
			t.Fatalf("OffsetForTimestamp(%d) = %+v %v %v, want offset %d found %v", tt.ts, got, ok, err, tt.offset, tt.found)
		}
		if ok && got.Timestamp < tt.ts {
			t.Fatalf("OffsetForTimestamp(%d) returned timestamp %d", tt.ts, got.Timestamp)
		}
	}
	got, ok, err := l.MaxTimestampOffset()
	if err != nil || !ok || got != (TimestampOffset{119, 2930}) {
		t.Fatalf("MaxTimestampOffset = %+v %v %v", got, ok, err)
	}
	// After DeleteRecords, lookups never answer below the log start offset.
	if err := l.AdvanceLogStartOffset(50); err != nil {
		t.Fatal(err)
	}
	if got, ok, _ := l.OffsetForTimestamp(0); !ok || got.Offset != 50 {
		t.Fatalf("after the log start moved: %+v", got)
	}
}

func TestFlushPolicy(t *testing.T) {
	t.Run("default leaves flushing to the OS", func(t *testing.T) {
		l, _ := openTestLog(t, smallConfig(), OpenOptions{})
		appendN(t, l, 5, batchSpec{records: 2, valueSize: 10}, 0)
		if l.RecoveryPoint() != 0 {
			t.Fatalf("recovery point %d", l.RecoveryPoint())
		}
		if err := l.Flush(); err != nil || l.RecoveryPoint() != 10 {
			t.Fatalf("flush: %v, recovery point %d", err, l.RecoveryPoint())
		}
	})
	t.Run("flush.messages", func(t *testing.T) {
		cfg := smallConfig()
		cfg.FlushMessages = 5
		l, _ := openTestLog(t, cfg, OpenOptions{})
		appendN(t, l, 2, batchSpec{records: 2, valueSize: 10}, 0)
		if l.RecoveryPoint() != 0 {
			t.Fatalf("flushed early: %d", l.RecoveryPoint())
		}
		appendN(t, l, 1, batchSpec{records: 2, valueSize: 10}, 0)
		if l.RecoveryPoint() != 6 {
			t.Fatalf("recovery point %d after 6 messages", l.RecoveryPoint())
		}
	})
	t.Run("flush.ms", func(t *testing.T) {
		cfg := smallConfig()
		cfg.FlushMs = 1000
		clock := &testClock{time.UnixMilli(0)}
		l, _ := openTestLog(t, cfg, OpenOptions{Now: clock.now})
		appendN(t, l, 1, batchSpec{records: 2, valueSize: 10}, 0)
		if err := l.MaybeFlush(); err != nil || l.RecoveryPoint() != 0 {
			t.Fatalf("flushed early: %v %d", err, l.RecoveryPoint())
		}
		clock.advance(time.Second)
		if err := l.MaybeFlush(); err != nil || l.RecoveryPoint() != 2 {
			t.Fatalf("not flushed after flush.ms: %v %d", err, l.RecoveryPoint())
		}
		clock.advance(time.Second)
		appendN(t, l, 1, batchSpec{records: 2, valueSize: 10}, 0)
		if l.RecoveryPoint() != 4 {
			t.Fatalf("append after flush.ms did not flush: %d", l.RecoveryPoint())
		}
	})
	// The broker's once-a-second flush.ms pass visits only the logs MaintenanceDue
	// names: those with records unflushed under a finite flush.ms, or failed.
	t.Run("maintenance due", func(t *testing.T) {
		l, _ := openTestLog(t, smallConfig(), OpenOptions{}) // flush.ms: Kafka's default, never
		appendN(t, l, 1, batchSpec{records: 2, valueSize: 10}, 0)
		if l.MaintenanceDue() {
			t.Fatal("due without a finite flush.ms")
		}
		cfg := smallConfig()
		cfg.FlushMs = 1000
		l.SetConfig(cfg) // records unflushed, flush.ms now finite
		if !l.MaintenanceDue() {
			t.Fatal("not due with records unflushed under flush.ms")
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := l.MaybeFlush(); err != nil || l.MaintenanceDue() {
			t.Fatalf("due once flushed: %v", err)
		}
		appendN(t, l, 1, batchSpec{records: 1, valueSize: 10}, 0)
		if !l.MaintenanceDue() {
			t.Fatal("not due after an append under flush.ms")
		}
		l.SetConfig(smallConfig())
		if l.MaintenanceDue() {
			t.Fatal("due after flush.ms went back to never")
		}
		_ = l.MarkFailed("test", errors.New("disk gone"))
		if !l.MaintenanceDue() {
			t.Fatal("a failed log is not due")
		}
	})
	t.Run("roll flushes the old segment", func(t *testing.T) {
		l, _ := openTestLog(t, smallConfig(), OpenOptions{})
		appendN(t, l, 2, batchSpec{records: 2, valueSize: 10}, 0)
		if err := l.Roll(); err != nil || l.RecoveryPoint() != 4 {
			t.Fatalf("roll: %v, recovery point %d", err, l.RecoveryPoint())
		}
	})
}

func TestReopenTrustsSegmentsBelowTheRecoveryPoint(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 3000
	l, dir := openTestLog(t, cfg, OpenOptions{})
	stored := appendN(t, l, 40, batchSpec{records: 3, valueSize: 50, baseTimestamp: 1, tsStep: 1}, 1)
	leo := l.LogEndOffset()
	n := len(l.Segments())
	l2, rep := reopen(t, l, dir, cfg, OpenOptions{RecoveryPoint: leo})
	if rep.SegmentsLoaded != n || rep.SegmentsRecovered != 1 || rep.Cut != nil {
		t.Fatalf("report %+v with %d segments", rep, n)
	}
	l3, rep := reopen(t, l2, dir, cfg, OpenOptions{CleanShutdown: true})
	if rep.SegmentsRecovered != 0 || len(rep.IndexesRebuilt) != 0 {
		t.Fatalf("clean shutdown still recovered: %+v", rep)
	}
	got := readAll(t, l3)
	if len(got) != len(stored) {
		t.Fatalf("read %d batches", len(got))
	}
	for i := range got {
		if !bytes.Equal(got[i], stored[i]) {
			t.Fatalf("batch %d differs", i)
		}
	}
	// Every batch has timestamps 1..3: the first record with the largest one is offset 2.
	if ts, ok, _ := l3.MaxTimestampOffset(); !ok || ts != (TimestampOffset{2, 3}) {
		t.Fatalf("max timestamp after trusted load: %+v", ts)
	}
}

func TestClosedLogRefusesWork(t *testing.T) {
	l, _ := openTestLog(t, smallConfig(), OpenOptions{})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsLeader(makeBatch(t, batchSpec{records: 1}), 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
	if _, err := l.Read(0, 1, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after close: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

// TestAppendLargerThanSegmentRefused: a leader append larger than segment.bytes is
// refused (Kafka's RECORD_LIST_TOO_LARGE) instead of making a segment past its size; a
// follower copies what its leader accepted.
func TestAppendLargerThanSegmentRefused(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 1024
	l, _ := openTestLog(t, cfg, OpenOptions{})
	defer l.Close()
	big := makeBatch(t, batchSpec{records: 1, valueSize: 2048})
	if _, err := l.AppendAsLeader(big, 0); !errors.Is(err, ErrRecordSetTooLarge) {
		t.Fatalf("append of %d bytes to 1024-byte segments: %v", len(big), err)
	}
	if l.LogEndOffset() != 0 {
		t.Fatal("the refused batch was appended")
	}
	if _, err := l.AppendAsFollower(big); err != nil {
		t.Fatalf("follower append: %v", err)
	}
}
