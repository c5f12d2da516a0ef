package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// Fuzz targets. Plain `go test` runs their seeds; run one with, for example,
//
//	go test -run XXX -fuzz FuzzRecoverTail -fuzztime 20s ./segment/

// fzSeedBatches returns valid producer batches of several shapes: codecs, headers,
// LogAppendTime, one record and many.
func fzSeedBatches(tb testing.TB) [][]byte {
	tb.Helper()
	specs := []batchSpec{
		{records: 1, valueSize: 0, baseTimestamp: 1000},
		{records: 3, valueSize: 20, baseTimestamp: 5000, tsStep: 7, headers: true},
		{records: 10, valueSize: 64, baseTimestamp: 1 << 40, tsStep: 1, codec: 1},
		{records: 4, valueSize: 30, baseTimestamp: 99, tsStep: 2, codec: 2},
		{records: 4, valueSize: 30, baseTimestamp: 99, tsStep: 2, codec: 3},
		{records: 4, valueSize: 30, baseTimestamp: 99, tsStep: 2, codec: 4},
		{records: 2, valueSize: 5, baseTimestamp: -1, logAppendTime: true},
	}
	var out [][]byte
	for i, spec := range specs {
		spec.seed = byte(i)
		out = append(out, makeBatch(tb, spec))
	}
	return out
}

// fzResign rewrites b's recordCount and lastOffsetDelta and fixes its CRC: a batch that
// validates but claims more records than it holds (validation does not count them).
func fzResign(b []byte, records int32) []byte {
	b = slices.Clone(b)
	binary.BigEndian.PutUint32(b[offsetLastOffsetDelta:], uint32(records-1))
	binary.BigEndian.PutUint32(b[offsetRecordCount:], uint32(records))
	binary.BigEndian.PutUint32(b[offsetCRC:], crc32.Checksum(b[offsetAttributes:], castagnoli))
	return b
}

// fzFixCRCs walks b as batches back to back and rewrites the CRC of each one whose
// framing holds, so that fuzzing reaches the checks behind the CRC. It stops at the first
// batch that does not frame.
func fzFixCRCs(b []byte) {
	for pos := 0; len(b)-pos >= BatchHeaderSize; {
		h, err := ParseBatchHeader(b[pos:])
		if err != nil || h.Size() > int64(len(b)-pos) {
			return
		}
		batch := b[pos : pos+int(h.Size())]
		binary.BigEndian.PutUint32(batch[offsetCRC:], crc32.Checksum(batch[offsetAttributes:], castagnoli))
		pos += int(h.Size())
	}
}

func fzRandom(seed int64, n int) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

func fzSentinel(err error) bool {
	return errors.Is(err, ErrInvalidBatch) || errors.Is(err, ErrCorruptBatch) || errors.Is(err, ErrUnsupportedMagic)
}

// FuzzValidateBatch: ValidateBatch and ParseBatchHeader never panic; a batch that
// validates is whole and sane, and stays valid once stamped (the CRC covers neither
// baseOffset nor partitionLeaderEpoch).
func FuzzValidateBatch(f *testing.F) {
	for _, b := range fzSeedBatches(f) {
		f.Add(b)
		f.Add(b[:len(b)-1])
		f.Add(b[:BatchHeaderSize])
		f.Add(b[:offsetMagic+1])
		f.Add(append(slices.Clone(b), 0))
		stamped := slices.Clone(b)
		stampBatch(stamped, 1<<40, 7)
		f.Add(stamped)
		f.Add(fzResign(b, math.MaxInt32))
	}
	f.Add([]byte{})
	f.Add(make([]byte, BatchHeaderSize))
	f.Add(fzRandom(1, 61))
	f.Add(fzRandom(2, 300))
	f.Fuzz(func(t *testing.T, data []byte) {
		orig := slices.Clone(data)
		ph, perr := ParseBatchHeader(data)
		h, err := ValidateBatch(data)
		if !bytes.Equal(data, orig) {
			t.Fatal("validation modified its input")
		}
		if perr != nil && !fzSentinel(perr) {
			t.Fatalf("ParseBatchHeader error wraps no sentinel: %v", perr)
		}
		if err != nil {
			if !fzSentinel(err) {
				t.Fatalf("ValidateBatch error wraps no sentinel: %v", err)
			}
			// validateBatches accepts several batches back to back, but not this one alone.
			if _, serr := validateBatches(data, false, false, false); serr == nil && ph.Size() == int64(len(data)) {
				t.Fatalf("validateBatches accepts a batch ValidateBatch rejects: %v", err)
			}
			return
		}
		if perr != nil || ph != h {
			t.Fatalf("ParseBatchHeader %+v, %v disagrees with ValidateBatch %+v", ph, perr, h)
		}
		if h.Size() != int64(len(data)) {
			t.Fatalf("valid batch of size %d in %d bytes", h.Size(), len(data))
		}
		if h.RecordCount < 1 || h.LastOffsetDelta != h.RecordCount-1 || h.Magic != MagicV2 || h.Codec() > maxCodec || h.BaseOffset < 0 {
			t.Fatalf("valid batch with header %+v", h)
		}
		set, serr := validateBatches(data, true, false, false)
		if serr != nil || set.count != 1 || set.records != int64(h.RecordCount) || set.lastOffset != h.LastOffset() {
			t.Fatalf("validateBatches on a valid batch: %+v, %v", set, serr)
		}
		for _, st := range []struct {
			base  int64
			epoch int32
		}{{0, -1}, {int64(len(data)) * 1_000_003, 12}, {math.MaxInt64 - int64(h.LastOffsetDelta), math.MaxInt32}} {
			b := slices.Clone(data)
			stampBatch(b, st.base, st.epoch)
			h2, err := ValidateBatch(b)
			if err != nil {
				t.Fatalf("stamped batch (%d, %d) no longer validates: %v", st.base, st.epoch, err)
			}
			want := h
			want.BaseOffset, want.PartitionLeaderEpoch = st.base, st.epoch
			if h2 != want {
				t.Fatalf("stamped header %+v, want %+v", h2, want)
			}
			if !bytes.Equal(b[offsetMagic:], data[offsetMagic:]) || !bytes.Equal(b[offsetBatchLength:offsetPartitionLeaderEpoch], data[offsetBatchLength:offsetPartitionLeaderEpoch]) {
				t.Fatal("stamping changed more than baseOffset and partitionLeaderEpoch")
			}
		}
	})
}

// fzConfig is smallConfig, or with tinyIndex one whose indexes hold a few entries, one
// per batch: appends of several batches must skip entries or roll rather than overflow.
func fzConfig(tinyIndex bool) Config {
	cfg := smallConfig()
	if tinyIndex {
		cfg.SegmentIndexBytes = 3 * timeIndexEntrySize
		cfg.IndexIntervalBytes = 0
	}
	return cfg
}

// fzClose closes a log's files without a flush (hundreds of fuzz runs a second).
func fzClose(t *testing.T, l *Log) {
	t.Helper()
	if err := l.closeFiles(); err != nil {
		t.Fatal(err)
	}
}

// FuzzAppendAsLeader: arbitrary bytes appended as leader to a fresh log either fail with
// one of the batch sentinels and leave the log unchanged, or are stored (stamped with
// their offsets and the epoch) and read back byte for byte, also after a restart that
// recovers everything. The same bytes are then appended a second time.
func FuzzAppendAsLeader(f *testing.F) {
	batches := fzSeedBatches(f)
	for i, b := range batches {
		f.Add(b, int32(i), i%2 == 0, false)
		f.Add(b, int32(i), i%2 == 1, true)
		f.Add(b[:len(b)-3], int32(1), false, false)
		f.Add(append(slices.Clone(b), 0, 0, 0, 0), int32(1), false, true)
		f.Add(append(slices.Clone(b), batches[(i+1)%len(batches)]...), int32(3), i%2 == 1, i%2 == 0)
	}
	f.Add(bytes.Join(batches, nil), int32(5), true, false)
	f.Add(bytes.Join(append(batches, batches...), nil), int32(0), true, true)
	f.Add(fzResign(batches[0], math.MaxInt32), int32(2), false, false)
	// Two batches that each claim 2^31-1 records: their offsets cannot share a segment.
	big := fzResign(batches[1], math.MaxInt32)
	f.Add(append(slices.Clone(big), big...), int32(2), false, false)
	f.Add([]byte{}, int32(0), false, false)
	f.Add(fzRandom(3, 200), int32(1), false, true)
	// fixCRC rewrites the CRCs of the input's batches first, so that mutations of the
	// fields behind the CRC reach the log.
	f.Fuzz(func(t *testing.T, data []byte, epoch int32, tinyIndex, fixCRC bool) {
		if fixCRC {
			fzFixCRCs(data)
		}
		cfg := fzConfig(tinyIndex)
		dir := t.TempDir()
		l, _, err := Open(dir, cfg, OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if !l.closed {
				fzClose(t, l)
			}
		}()
		in := slices.Clone(data)
		info, err := l.AppendAsLeader(data, epoch)
		if err != nil {
			if !fzSentinel(err) {
				t.Fatalf("append error wraps no sentinel: %v", err)
			}
			if !bytes.Equal(data, in) {
				t.Fatal("a rejected append modified its input")
			}
			if l.LogEndOffset() != 0 || l.Size() != 0 {
				t.Fatalf("a rejected append changed the log: end offset %d, size %d", l.LogEndOffset(), l.Size())
			}
			return
		}
		// What the log should hold: in, each batch stamped.
		want := slices.Clone(in)
		var wantBatches [][]byte
		next := int64(0)
		for pos := 0; pos < len(want); {
			h, err := ParseBatchHeader(want[pos:])
			if err != nil {
				t.Fatalf("accepted input does not parse at %d: %v", pos, err)
			}
			b := want[pos : pos+int(h.Size())]
			stampBatch(b, next, epoch)
			wantBatches = append(wantBatches, b)
			next += int64(h.LastOffsetDelta) + 1
			pos += int(h.Size())
		}
		if !bytes.Equal(data, want) {
			t.Fatal("the stamped input is not the input with baseOffset and epoch rewritten")
		}
		if info.FirstOffset != 0 || info.LastOffset != next-1 || l.LogEndOffset() != next || info.Batches != len(wantBatches) || info.Bytes != int64(len(in)) {
			t.Fatalf("append info %+v, log end %d; want offsets 0..%d in %d batches", info, l.LogEndOffset(), next-1, len(wantBatches))
		}
		fzCheckLog(t, "after append", l, wantBatches)

		// Whatever the log accepted survives a restart that recovers every segment.
		fzClose(t, l)
		l, rep, err := Open(dir, cfg, OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Cut != nil || l.LogEndOffset() != next {
			t.Fatalf("recovery cut accepted data: log end %d, want %d, cut %+v", l.LogEndOffset(), next, rep.Cut)
		}
		fzCheckLog(t, "after recovery", l, wantBatches)

		// The same bytes again, after the first copy: a second append may roll.
		again := slices.Clone(in)
		info, err = l.AppendAsLeader(again, epoch)
		if err != nil {
			t.Fatalf("second append of accepted bytes: %v", err)
		}
		if info.FirstOffset != next {
			t.Fatalf("second append at %d, want %d", info.FirstOffset, next)
		}
		for pos := 0; pos < len(again); {
			h, _ := ParseBatchHeader(again[pos:])
			wantBatches = append(wantBatches, again[pos:pos+int(h.Size())])
			pos += int(h.Size())
		}
		fzCheckLog(t, "after the second append", l, wantBatches)
		fzClose(t, l)
		l, rep, err = Open(dir, cfg, OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Cut != nil {
			t.Fatalf("recovery cut accepted data: %+v", rep.Cut)
		}
		fzCheckLog(t, "after the second recovery", l, wantBatches)
	})
}

// fzCheckLog checks that l holds exactly want, batch by batch, and that each batch is
// found from any of its offsets.
func fzCheckLog(t *testing.T, what string, l *Log, want [][]byte) {
	t.Helper()
	got := readAll(t, l)
	if len(got) != len(want) {
		t.Fatalf("%s: read %d batches, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("%s: batch %d differs", what, i)
		}
		h, _ := ParseBatchHeader(want[i])
		for _, off := range []int64{h.LastOffset(), h.BaseOffset + int64(h.LastOffsetDelta)/2} {
			r, err := l.Read(off, 1, l.LogEndOffset())
			if err != nil || r.FirstOffset != h.BaseOffset || r.Size != h.Size() {
				t.Fatalf("%s: Read(%d) = %+v, %v; want the batch at %d", what, off, r, err, h.BaseOffset)
			}
		}
	}
}

// fzTemplate is a closed log of a few segments whose files every FuzzRecoverTail run
// copies.
type fzTemplate struct {
	files   map[string][]byte
	active  string // the active segment's .log
	batches [][]byte
	leo     int64
	size    int64 // of the active .log
}

func fzBuildTemplate(f *testing.F) *fzTemplate {
	dir := f.TempDir()
	cfg := smallConfig()
	cfg.IndexIntervalBytes = 100
	l, _, err := Open(dir, cfg, OpenOptions{})
	if err != nil {
		f.Fatal(err)
	}
	tp := &fzTemplate{files: map[string][]byte{}}
	for s := range 3 {
		if s > 0 {
			if err := l.Roll(); err != nil {
				f.Fatal(err)
			}
		}
		for i := range 3 {
			tp.batches = append(tp.batches, appendN(f, l, 1, batchSpec{records: 1 + i, valueSize: 10 + 20*s, baseTimestamp: int64(1000 * (3*s + i)), tsStep: 1, headers: i == 1}, int32(s+1))...)
		}
	}
	segs := l.Segments()
	tp.active = segmentFileName(segs[len(segs)-1].BaseOffset, LogFileSuffix)
	tp.leo, tp.size = l.LogEndOffset(), segs[len(segs)-1].Size
	if err := l.Close(); err != nil {
		f.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		tp.files[e.Name()] = b
	}
	return tp
}

// FuzzRecoverTail appends arbitrary bytes to the active .log of a valid log and opens it:
// Open must not fail, every original batch must read back unchanged, whatever else is
// kept must be valid batches that continue the offsets, and the log must take appends.
func FuzzRecoverTail(f *testing.F) {
	tp := fzBuildTemplate(f)
	last := tp.batches[len(tp.batches)-1]
	lh, _ := ParseBatchHeader(last)
	next := slices.Clone(last) // a valid batch that continues the log
	stampBatch(next, tp.leo, lh.PartitionLeaderEpoch)
	gap := slices.Clone(next) // valid, but leaves a gap in the offsets
	stampBatch(gap, tp.leo+5, lh.PartitionLeaderEpoch)
	next2 := slices.Clone(next)
	stampBatch(next2, tp.leo+int64(lh.LastOffsetDelta)+1, lh.PartitionLeaderEpoch+1)
	f.Add([]byte{}, false, false)
	f.Add(next, false, false)
	f.Add(next, true, true)
	f.Add(append(slices.Clone(next), next2...), false, true)
	f.Add(append(slices.Clone(next), next[:20]...), false, false)
	f.Add(gap, false, false)
	f.Add(slices.Clone(last), false, false) // overlaps the last batch
	f.Add(next[:len(next)-1], true, false)
	f.Add(next[:BatchHeaderSize], false, true)
	f.Add(next[:10], false, false)
	f.Add(make([]byte, 4096), false, false)
	f.Add(fzRandom(4, 1000), true, true)
	f.Add(fzResign(next, math.MaxInt32), false, false)
	for _, b := range fzSeedBatches(f) {
		f.Add(b, false, false)
	}
	// fixCRC rewrites the CRCs of the tail's batches, so that mutations of the fields
	// behind the CRC reach recovery.
	f.Fuzz(func(t *testing.T, tail []byte, trustClosed, fixCRC bool) {
		if fixCRC {
			fzFixCRCs(tail)
		}
		dir := t.TempDir()
		for name, b := range tp.files {
			if name == tp.active {
				b = append(slices.Clone(b), tail...)
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cfg := smallConfig()
		cfg.IndexIntervalBytes = 100
		opts := OpenOptions{}
		if trustClosed {
			opts.RecoveryPoint = tp.leo
		}
		l, rep, err := Open(dir, cfg, opts)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer func() {
			if !l.closed {
				fzClose(t, l)
			}
		}()
		if l.LogEndOffset() < tp.leo {
			t.Fatalf("log end offset %d below the original %d", l.LogEndOffset(), tp.leo)
		}
		got := readAll(t, l)
		if len(got) < len(tp.batches) {
			t.Fatalf("read %d batches, the log had %d", len(got), len(tp.batches))
		}
		want := tp.leo
		for i, b := range got {
			if i < len(tp.batches) && !bytes.Equal(b, tp.batches[i]) {
				t.Fatalf("original batch %d differs", i)
			}
			h, err := ValidateBatch(b)
			if err != nil {
				t.Fatalf("kept batch %d is invalid: %v", i, err)
			}
			if i >= len(tp.batches) {
				if h.BaseOffset != want {
					t.Fatalf("kept batch %d starts at %d, want %d", i, h.BaseOffset, want)
				}
				want = h.NextOffset()
			}
		}
		if want != l.LogEndOffset() {
			t.Fatalf("batches end at %d, log end offset %d", want, l.LogEndOffset())
		}
		segs := l.Segments()
		activeSize := segs[len(segs)-1].Size
		fileSize := tp.size + int64(len(tail))
		if rep.Cut == nil {
			if activeSize != fileSize {
				t.Fatalf("no cut reported, yet the active segment has %d bytes of %d", activeSize, fileSize)
			}
		} else if rep.Cut.Position != activeSize || rep.Cut.Position+rep.Cut.TruncatedBytes != fileSize || rep.Cut.Offset != l.LogEndOffset() || rep.Cut.Reason == nil || len(tail) == 0 {
			t.Fatalf("cut %+v with the active segment at %d bytes of %d", rep.Cut, activeSize, fileSize)
		}
		if len(rep.DeletedSegments) != 0 {
			t.Fatalf("deleted segments %v", rep.DeletedSegments)
		}
		b := makeBatch(t, batchSpec{records: 2, valueSize: 9, baseTimestamp: 1 << 41})
		leo := l.LogEndOffset()
		if info, err := l.AppendAsLeader(b, max(l.LeaderEpochs().LatestEpoch(), 0)); err != nil || info.FirstOffset != leo {
			t.Fatalf("append after recovery: %+v, %v", info, err)
		}
		if got := readAll(t, l); !bytes.Equal(got[len(got)-1], b) {
			t.Fatal("batch appended after recovery reads back differently")
		}
	})
}

// FuzzWalkRecords: walkRecords never panics, calls fn at most count times and once per
// at least four bytes, stops when fn says so, and decodes what encodeRecords encodes.
func FuzzWalkRecords(f *testing.F) {
	for i, spec := range []batchSpec{
		{records: 1},
		{records: 3, valueSize: 20, tsStep: 5, headers: true},
		{records: 20, valueSize: 3, tsStep: -1},
		{records: 2, valueSize: 300, tsStep: 1 << 40},
	} {
		recs := encodeRecords(spec)
		f.Add(recs, int32(spec.records), uint8(0))
		f.Add(recs, int32(spec.records+1), uint8(i))
		f.Add(recs[:len(recs)-1], int32(spec.records), uint8(0))
		f.Add(recs, int32(math.MaxInt32), uint8(2))
	}
	f.Add([]byte{}, int32(0), uint8(0))
	f.Add([]byte{}, int32(-1), uint8(0))
	f.Add([]byte{0x01}, int32(1), uint8(0))
	f.Add([]byte{0x06, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00}, int32(1), uint8(0))
	f.Add(fzRandom(5, 64), int32(8), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, count int32, stopAfter uint8) {
		orig := slices.Clone(data)
		calls := 0
		err := walkRecords(data, count, func(offsetDelta int32, timestampDelta int64) bool {
			calls++
			if offsetDelta < 0 {
				t.Fatalf("negative offset delta %d", offsetDelta)
			}
			return true
		})
		if !bytes.Equal(data, orig) {
			t.Fatal("walkRecords modified its input")
		}
		if err != nil && !errors.Is(err, ErrInvalidBatch) {
			t.Fatalf("error wraps no sentinel: %v", err)
		}
		if int64(calls) > max(int64(count), 0) || calls > len(data)/4 {
			t.Fatalf("%d calls for count %d and %d bytes", calls, count, len(data))
		}
		if err == nil && int64(calls) != max(int64(count), 0) {
			t.Fatalf("no error after %d of %d records", calls, count)
		}
		// fn returning false ends the walk there, without an error.
		stopCalls := 0
		err2 := walkRecords(data, count, func(int32, int64) bool {
			stopCalls++
			return stopCalls <= int(stopAfter)
		})
		if stopCalls != min(calls, int(stopAfter)+1) {
			t.Fatalf("walk told to stop at record %d made %d calls; a full walk made %d", int(stopAfter)+1, stopCalls, calls)
		}
		if stopped := calls > int(stopAfter); stopped && err2 != nil || !stopped && (err2 == nil) != (err == nil) {
			t.Fatalf("walk told to stop at record %d returned %v; a full walk returned %v", int(stopAfter)+1, err2, err)
		}
	})
}

// FuzzCheckRecords: CheckRecords never panics or modifies its input, wraps a sentinel in
// every error, gives the same verdict in place and streamed (in pieces of any size,
// into the smallest scratch buffer), never reads more than limit+1 bytes of the stream,
// and accepts every section kmsg encodes.
func FuzzCheckRecords(f *testing.F) {
	for _, spec := range []batchSpec{
		{records: 1},
		{records: 3, valueSize: 20, tsStep: 5, headers: true},
		{records: 20, valueSize: 3, tsStep: -1},
		{records: 2, valueSize: 300, tsStep: 1 << 40, headers: true},
	} {
		recs := encodeRecords(spec)
		f.Add(recs, int32(spec.records), uint8(1), uint32(1<<20))
		f.Add(recs, int32(spec.records), uint8(7), uint32(len(recs)))
		f.Add(recs, int32(spec.records), uint8(0), uint32(len(recs)-1))
		f.Add(recs, int32(spec.records+1), uint8(3), uint32(1<<20))
		f.Add(recs[:len(recs)-1], int32(spec.records), uint8(0), uint32(1<<20))
	}
	f.Add([]byte{}, int32(1), uint8(0), uint32(0))
	f.Add([]byte{0x80, 0x80, 0x80, 0x80, 0x08}, int32(1), uint8(1), uint32(100))
	f.Add(fzRandom(7, 80), int32(4), uint8(5), uint32(1000))
	f.Fuzz(func(t *testing.T, records []byte, count int32, chunk uint8, limit uint32) {
		if count < 1 {
			count = 1 // ValidateBatch refuses the rest before CheckRecords runs
		}
		b := rcBatch(records, count, 0)
		orig := slices.Clone(b)
		sum, err := CheckRecords(b, nil, int64(limit), nil)
		if !bytes.Equal(b, orig) {
			t.Fatal("CheckRecords modified its input")
		}
		if err != nil && !errors.Is(err, ErrInvalidRecord) {
			t.Fatalf("in place: error wraps no sentinel: %v", err)
		}
		if err == nil && sum.Bytes != int64(len(records)) {
			t.Fatalf("in place: accepted, summary says %d bytes of %d", sum.Bytes, len(records))
		}
		piece := int(chunk%16) + 1
		src := &countingReader{r: &chunkReader{data: records, n: piece}}
		sumS, errS := CheckRecords(rcBatch([]byte{1}, count, 1), src, int64(limit), make([]byte, MinRecordsScratch))
		if src.n > int64(limit)+1 {
			t.Fatalf("streamed: read %d bytes with limit %d", src.n, limit)
		}
		if errS != nil && !errors.Is(errS, ErrInvalidRecord) && !errors.Is(errS, ErrRecordsTooLarge) {
			t.Fatalf("streamed: error wraps no sentinel: %v", errS)
		}
		fits := int64(len(records)) <= int64(limit)
		switch {
		case fits && (err == nil) != (errS == nil):
			t.Fatalf("in place %v, streamed %v", err, errS)
		case !fits && errS == nil:
			t.Fatalf("streamed: a %d-byte section was accepted with limit %d", len(records), limit)
		case errS == nil && !reflect.DeepEqual(sumS, sum):
			t.Fatalf("summaries differ: %+v in place, %+v streamed", sum, sumS)
		}
	})
}

// chunkReader returns at most n bytes per Read.
type chunkReader struct {
	data []byte
	n    int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), r.n)], r.data)
	r.data = r.data[k:]
	return k, nil
}
