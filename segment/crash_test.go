package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Crash recovery tests: damage the files of a closed log the way a crash or a bad disk
// would, reopen, and check what Open keeps, cuts and reports.

// crashBatch is one stored batch and where it lives.
type crashBatch struct {
	data     []byte // stored bytes, with the assigned offset and epoch
	base     int64  // base offset
	last     int64  // last offset
	segBase  int64  // base offset of the segment holding it
	pos      int64  // byte position in that segment's .log
	firstTs  int64  // timestamp of the first record
	maxTs    int64  // timestamp of the last record
	segIndex int    // index of its segment
}

// crashLog describes a log built by crashBuild and closed.
type crashLog struct {
	dir      string
	cfg      Config
	batches  []crashBatch
	segBases []int64
	segSizes []int64
	segInfos []SegmentInfo
	leo      int64
	epochs   []EpochEntry
	snap     map[string][]byte // every file of dir, for restore
}

// crashSpec returns a batch spec of a few records whose size and content vary with i.
// Timestamps grow across batches: batch i starts at 1_000_000 + 1000*i, one ms per record.
func crashSpec(i int) batchSpec {
	return batchSpec{
		records:       1 + i%4,
		valueSize:     15 + (i*37)%90,
		baseTimestamp: 1_000_000 + 1000*int64(i),
		tsStep:        1,
		headers:       i%3 == 1,
	}
}

// crashBuild builds a log in a fresh directory with one segment per entry of perSegment
// (that many batches each, the last segment active), segment s appended in epoch s+1,
// and closes it.
func crashBuild(t *testing.T, cfg Config, perSegment []int) *crashLog {
	t.Helper()
	dir := t.TempDir()
	l, _, err := Open(dir, cfg, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := &crashLog{dir: dir, cfg: cfg}
	i := 0
	for s, n := range perSegment {
		if s > 0 {
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
		}
		for range n {
			spec := crashSpec(i)
			spec.seed = byte(i * 13)
			b := makeBatch(t, spec)
			info, err := l.AppendAsLeader(b, int32(s+1))
			if err != nil {
				t.Fatalf("append %d: %v", i, err)
			}
			if info.Batches != 1 {
				t.Fatalf("append %d wrote %d batches", i, info.Batches)
			}
			c.batches = append(c.batches, crashBatch{
				data: b, base: info.FirstOffset, last: info.LastOffset,
				segBase: info.SegmentBaseOffset, pos: info.Position,
				firstTs: spec.baseTimestamp, maxTs: spec.baseTimestamp + int64(spec.records-1),
				segIndex: s,
			})
			i++
		}
	}
	c.segInfos = l.Segments()
	for _, si := range c.segInfos {
		c.segBases = append(c.segBases, si.BaseOffset)
		c.segSizes = append(c.segSizes, si.Size)
	}
	if len(c.segBases) != len(perSegment) {
		t.Fatalf("built %d segments, want %d", len(c.segBases), len(perSegment))
	}
	for _, b := range c.batches {
		if b.segBase != c.segBases[b.segIndex] {
			t.Fatalf("batch at %d went to segment %d, want %d", b.base, b.segBase, c.segBases[b.segIndex])
		}
	}
	c.leo = l.LogEndOffset()
	c.epochs = l.LeaderEpochs().Entries()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	c.snap = crashSnapshot(t, dir)
	return c
}

// crashSnapshot reads every file of dir.
func crashSnapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	snap := map[string][]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		snap[e.Name()] = b
	}
	return snap
}

// restore puts dir back to the snapshot taken when the log was built: files not in the
// snapshot are removed, the others rewritten.
func (c *crashLog) restore(t *testing.T) {
	t.Helper()
	ents, err := os.ReadDir(c.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if _, ok := c.snap[e.Name()]; !ok {
			if err := os.Remove(filepath.Join(c.dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, b := range c.snap {
		path := filepath.Join(c.dir, name)
		if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, b) {
			continue
		}
		// Remove first: rewriting a file in place through O_TRUNC makes ext4 flush it
		// on close (auto_da_alloc), which makes these loops slow.
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func (c *crashLog) path(segIndex int, suffix string) string {
	return segmentPath(c.dir, c.segBases[segIndex], suffix)
}

// crashDatas returns the stored bytes of batches.
func crashDatas(bs []crashBatch) [][]byte {
	out := make([][]byte, len(bs))
	for i, b := range bs {
		out[i] = b.data
	}
	return out
}

// crashCheckBatches fails unless got equals want batch for batch, byte for byte.
func crashCheckBatches(t *testing.T, what string, got, want [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: read %d batches, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("%s: batch %d differs (%d bytes, want %d)", what, i, len(got[i]), len(want[i]))
		}
	}
}

// crashCheckTimestamps checks OffsetForTimestamp for the first and last record of every
// batch (timestamps grow strictly across the log, see crashSpec).
func crashCheckTimestamps(t *testing.T, what string, l *Log, bs []crashBatch) {
	t.Helper()
	for _, b := range bs {
		for _, q := range []struct{ ts, off int64 }{{b.firstTs, b.base}, {b.maxTs, b.last}, {b.firstTs - 500, b.base}} {
			got, ok, err := l.OffsetForTimestamp(q.ts)
			if err != nil || !ok {
				t.Fatalf("%s: OffsetForTimestamp(%d): ok %v, err %v", what, q.ts, ok, err)
			}
			wantTs := max(q.ts, b.firstTs)
			if got.Offset != q.off || got.Timestamp != wantTs {
				t.Fatalf("%s: OffsetForTimestamp(%d) = %+v, want offset %d timestamp %d", what, q.ts, got, q.off, wantTs)
			}
		}
	}
	if len(bs) > 0 {
		if got, ok, err := l.OffsetForTimestamp(bs[len(bs)-1].maxTs + 1); err != nil || ok {
			t.Fatalf("%s: OffsetForTimestamp past the end = %+v, %v, %v", what, got, ok, err)
		}
	}
}

// crashAppendOne appends one more batch in epoch and checks that the whole log, want
// followed by it, reads back.
func crashAppendOne(t *testing.T, what string, l *Log, want [][]byte, epoch int32) {
	t.Helper()
	leo := l.LogEndOffset()
	b := makeBatch(t, batchSpec{records: 3, valueSize: 40, baseTimestamp: 9_000_000, tsStep: 1, seed: 0x5a})
	info, err := l.AppendAsLeader(b, epoch)
	if err != nil {
		t.Fatalf("%s: append after recovery: %v", what, err)
	}
	if info.FirstOffset != leo || l.LogEndOffset() != leo+3 {
		t.Fatalf("%s: append after recovery got offsets %d..%d, log end %d, want from %d", what, info.FirstOffset, info.LastOffset, l.LogEndOffset(), leo)
	}
	crashCheckBatches(t, what+", after append", readAll(t, l), append(slices.Clip(want), b))
}

func crashOpen(t *testing.T, what string, c *crashLog, opts OpenOptions) (*Log, *RecoveryReport) {
	t.Helper()
	l, rep, err := Open(c.dir, c.cfg, opts)
	if err != nil {
		t.Fatalf("%s: Open: %v", what, err)
	}
	return l, rep
}

// crashClose closes l's files without the final flush (Close would fsync; the loops here
// open hundreds of logs, and what Open reads does not depend on it).
func crashClose(t *testing.T, what string, l *Log) {
	t.Helper()
	if l.closed {
		return
	}
	if err := l.closeFiles(); err != nil {
		t.Fatalf("%s: Close: %v", what, err)
	}
}

func crashFlipBit(t *testing.T, path string, pos int64, bit uint) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[pos] ^= 1 << bit
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func crashConfig() Config {
	cfg := smallConfig()
	cfg.IndexIntervalBytes = 200 // several index entries per small segment
	return cfg
}

// TestCrash_TruncateActiveAtEveryByte cuts the active .log at every byte of its last two
// batches, as a crash before the page cache reached the disk would, and checks that
// recovery keeps exactly the whole batches before the cut.
func TestCrash_TruncateActiveAtEveryByte(t *testing.T) {
	c := crashBuild(t, crashConfig(), []int{3, 4, 3})
	active := len(c.segBases) - 1
	var inActive []crashBatch
	for _, b := range c.batches {
		if b.segIndex == active {
			inActive = append(inActive, b)
		}
	}
	if len(inActive) < 3 {
		t.Fatalf("active segment holds %d batches", len(inActive))
	}
	tail := inActive[len(inActive)-2:]
	for _, b := range tail {
		if n := len(b.data); n < 100 || n > 600 {
			t.Fatalf("tail batch of %d bytes; keep them small", n)
		}
	}
	full := c.segSizes[active]
	start := tail[0].pos
	if end := tail[1].pos + int64(len(tail[1].data)); end != full {
		t.Fatalf("last batch ends at %d, segment size %d", end, full)
	}
	firstActive := len(c.batches) - len(inActive) // index of the first batch in the active segment
	activeEpoch := int32(active + 1)
	logPath := c.path(active, LogFileSuffix)

	variants := []struct {
		name          string
		opts          OpenOptions
		wantRecovered int
		sample        int64 // run at every sample-th cut, and next to batch boundaries
	}{
		{"recovery point 0", OpenOptions{}, len(c.segBases), 1},
		// Every closed segment is trusted; the last one is always recovered, with the
		// same result.
		{"recovery point at log end", OpenOptions{RecoveryPoint: c.leo}, 1, 7},
	}
	for cut := start; cut < full; cut++ {
		// Batches wholly below cut survive.
		intact := firstActive
		for _, b := range inActive {
			if b.pos+int64(len(b.data)) <= cut {
				intact++
			}
		}
		boundary := c.batches[intact].pos // start of the first torn or missing batch
		wantLEO := c.batches[intact].base
		want := crashDatas(c.batches[:intact])
		for _, v := range variants {
			if d := cut - boundary; cut%v.sample != 0 && d > 1 && d != BatchHeaderSize-1 && d != BatchHeaderSize {
				continue
			}
			what := v.name + ", cut at " + fmt.Sprint(cut)
			c.restore(t)
			if err := os.Truncate(logPath, cut); err != nil {
				t.Fatal(err)
			}
			l, rep := crashOpen(t, what, c, v.opts)
			if l.LogEndOffset() != wantLEO {
				t.Fatalf("%s: log end offset %d, want %d", what, l.LogEndOffset(), wantLEO)
			}
			if rep.SegmentsRecovered != v.wantRecovered || rep.SegmentsLoaded != len(c.segBases) {
				t.Fatalf("%s: recovered %d of %d segments, want %d of %d", what, rep.SegmentsRecovered, rep.SegmentsLoaded, v.wantRecovered, len(c.segBases))
			}
			if len(rep.DeletedSegments) != 0 {
				t.Fatalf("%s: deleted segments %v", what, rep.DeletedSegments)
			}
			if !slices.Contains(rep.IndexesRebuilt, c.segBases[active]) {
				t.Fatalf("%s: active segment's indexes not rebuilt: %v", what, rep.IndexesRebuilt)
			}
			// A cut exactly at a batch boundary leaves only whole batches: nothing is
			// torn, so nothing is reported.
			if cut == boundary {
				if rep.Cut != nil {
					t.Fatalf("%s: cut at a batch boundary reported %+v", what, rep.Cut)
				}
			} else {
				want := RecoveryCut{SegmentBaseOffset: c.segBases[active], Position: boundary, Offset: wantLEO, TruncatedBytes: cut - boundary}
				if rep.Cut == nil {
					t.Fatalf("%s: torn batch not reported", what)
				}
				got := *rep.Cut
				got.Reason = nil
				if got != want || rep.Cut.Reason == nil {
					t.Fatalf("%s: cut %+v, want %+v with a reason", what, *rep.Cut, want)
				}
			}
			if st, err := os.Stat(logPath); err != nil || st.Size() != boundary {
				t.Fatalf("%s: active .log not truncated to %d: %v %v", what, boundary, st.Size(), err)
			}
			if got := l.LeaderEpochs().Entries(); !slices.Equal(got, c.epochs) {
				t.Fatalf("%s: leader epochs %v, want %v", what, got, c.epochs)
			}
			crashCheckBatches(t, what, readAll(t, l), want)
			crashAppendOne(t, what, l, want, activeEpoch)
			crashClose(t, what, l)
		}
	}
}

// TestCrash_BitFlipInClosedSegment flips single bits in a closed segment's batches,
// indexes and the leader epoch checkpoint.
func TestCrash_BitFlipInClosedSegment(t *testing.T) {
	c := crashBuild(t, crashConfig(), []int{4, 6, 3, 2})
	const damagedSeg = 1
	var inSeg []int // indexes into c.batches of the damaged segment's batches
	for i, b := range c.batches {
		if b.segIndex == damagedSeg {
			inSeg = append(inSeg, i)
		}
	}
	mid := inSeg[4] // a small batch (one record) with batches before and after it
	if n := len(c.batches[mid].data); n > 200 {
		t.Fatalf("batch %d has %d bytes; keep it small", mid, n)
	}

	// expectCut checks a log cut at batch k of the damaged segment.
	expectCut := func(t *testing.T, what string, l *Log, rep *RecoveryReport, k int) {
		t.Helper()
		b := c.batches[k]
		if l.LogEndOffset() != b.base {
			t.Fatalf("%s: log end offset %d, want %d", what, l.LogEndOffset(), b.base)
		}
		if rep.Cut == nil || rep.Cut.Reason == nil {
			t.Fatalf("%s: no cut reported (%+v)", what, rep.Cut)
		}
		got := *rep.Cut
		got.Reason = nil
		want := RecoveryCut{SegmentBaseOffset: b.segBase, Position: b.pos, Offset: b.base, TruncatedBytes: c.segSizes[damagedSeg] - b.pos}
		if got != want {
			t.Fatalf("%s: cut %+v, want %+v", what, got, want)
		}
		wantDeleted := slices.Clone(c.segBases[damagedSeg+1:])
		if b.pos == 0 {
			// The damaged segment is left empty and dropped too.
			wantDeleted = append(wantDeleted, b.segBase)
		}
		gotDeleted := slices.Clone(rep.DeletedSegments)
		slices.Sort(gotDeleted)
		slices.Sort(wantDeleted)
		if !slices.Equal(gotDeleted, wantDeleted) {
			t.Fatalf("%s: deleted segments %v, want %v", what, rep.DeletedSegments, wantDeleted)
		}
		for _, base := range wantDeleted {
			if fileExists(segmentPath(c.dir, base, LogFileSuffix)) {
				t.Fatalf("%s: deleted segment %d still has its .log", what, base)
			}
		}
		want2 := crashDatas(c.batches[:k])
		crashCheckBatches(t, what, readAll(t, l), want2)
		crashAppendOne(t, what, l, want2, int32(damagedSeg+1))
	}

	t.Run("batch bytes", func(t *testing.T) {
		logPath := c.path(damagedSeg, LogFileSuffix)
		cases := []struct {
			k        int  // batch index in c.batches
			allBytes bool // every byte, else the header and a few body bytes
		}{
			{mid, true},       // a batch in the middle of the segment
			{inSeg[0], false}, // the first batch: the segment is left empty
		}
		for _, tc := range cases {
			b := c.batches[tc.k]
			for off := int64(0); off < int64(len(b.data)); off++ {
				if off >= offsetPartitionLeaderEpoch && off < offsetMagic {
					continue // outside the CRC: see "leader epoch field"
				}
				framing := off >= offsetBatchLength && off < offsetPartitionLeaderEpoch || off == offsetMagic
				if !tc.allBytes && !framing && off%5 != 0 && off != int64(len(b.data))-1 {
					continue
				}
				bits := []uint{uint(off*5) % 8}
				if framing {
					bits = []uint{0, 3, 7} // low, middle and sign bits
				}
				for _, bit := range bits {
					what := "batch " + fmt.Sprint(tc.k) + " byte " + fmt.Sprint(off) + " bit " + fmt.Sprint(bit)
					c.restore(t)
					crashFlipBit(t, logPath, b.pos+off, bit)
					l, rep := crashOpen(t, what, c, OpenOptions{})
					expectCut(t, what, l, rep, tc.k)
					crashClose(t, what, l)
				}
			}
		}
	})

	// partitionLeaderEpoch (bytes 12..15) is outside the CRC, as in Kafka, so a flip there
	// cannot be detected: recovery checks the CRC and offset contiguity but not the epochs'
	// order. The data stays readable and only that batch's epoch field changes.
	t.Run("leader epoch field", func(t *testing.T) {
		k := mid
		b := c.batches[k]
		epoch := int32(binary.BigEndian.Uint32(b.data[offsetPartitionLeaderEpoch:]))
		if epoch != damagedSeg+1 {
			t.Fatalf("stored epoch %d", epoch)
		}
		for _, f := range []struct {
			byteOff int64
			bit     uint
		}{{15, 0}, {15, 1}, {15, 2}, {14, 0}, {12, 6}, {12, 7}} {
			for _, dropCheckpoint := range []bool{false, true} {
				what := "epoch byte " + fmt.Sprint(f.byteOff) + " bit " + fmt.Sprint(f.bit)
				if dropCheckpoint {
					what += ", checkpoint missing"
				}
				c.restore(t)
				crashFlipBit(t, c.path(damagedSeg, LogFileSuffix), b.pos+f.byteOff, f.bit)
				if dropCheckpoint {
					if err := os.Remove(filepath.Join(c.dir, LeaderEpochCheckpointFile)); err != nil {
						t.Fatal(err)
					}
				}
				l, rep := crashOpen(t, what, c, OpenOptions{})
				if rep.Cut != nil || len(rep.DeletedSegments) != 0 || l.LogEndOffset() != c.leo {
					t.Fatalf("%s: cut %+v, deleted %v, log end %d (want %d)", what, rep.Cut, rep.DeletedSegments, l.LogEndOffset(), c.leo)
				}
				want := crashDatas(c.batches)
				flipped := slices.Clone(b.data)
				flipped[f.byteOff] ^= 1 << f.bit
				want[k] = flipped
				crashCheckBatches(t, what, readAll(t, l), want)
				if _, err := ValidateBatch(flipped); err != nil {
					t.Fatalf("%s: the CRC covers the epoch field: %v", what, err)
				}
				got := l.LeaderEpochs().Entries()
				if !dropCheckpoint {
					// The checkpoint is trusted: the cache does not change.
					if !slices.Equal(got, c.epochs) {
						t.Fatalf("%s: leader epochs %v, want %v", what, got, c.epochs)
					}
				} else {
					if !rep.LeaderEpochsRebuilt {
						t.Fatalf("%s: leader epochs not rebuilt", what)
					}
					// Rebuilt from batch headers, the cache takes the flipped epoch at face
					// value when it is larger than the ones before it (the documented
					// limitation); it stays monotonic and within the log.
					for i := 1; i < len(got); i++ {
						if got[i].Epoch <= got[i-1].Epoch || got[i].StartOffset <= got[i-1].StartOffset {
							t.Fatalf("%s: rebuilt leader epochs not monotonic: %v", what, got)
						}
					}
					if n := len(got); n == 0 || got[n-1].StartOffset >= c.leo {
						t.Fatalf("%s: rebuilt leader epochs %v", what, got)
					}
					if !slices.Equal(got, c.epochs) {
						t.Logf("%s: undetectable: rebuilt leader epochs %v, true ones %v", what, got, c.epochs)
					}
				}
				crashCheckTimestamps(t, what, l, c.batches)
				crashClose(t, what, l)
			}
		}
	})

	// Index files: a flip either makes the index fail validation (it is rebuilt) or leaves
	// one that still looks valid. Either way every read must return the right data.
	for _, suffix := range []string{IndexFileSuffix, TimeIndexFileSuffix} {
		t.Run(suffix, func(t *testing.T) {
			path := c.path(damagedSeg, suffix)
			size := int64(len(c.snap[filepath.Base(path)]))
			if size < 2*timeIndexEntrySize {
				t.Fatalf("%s has %d bytes; want a few entries", path, size)
			}
			// The bits to flip in the bytes that hold the low bits of an entry's fields:
			// small changes can keep the entries ordered and pass validation. The other
			// bytes get one bit.
			all := []uint{0, 1, 2, 3, 4, 5, 6, 7}
			entrySize, low := int64(offsetIndexEntrySize), map[int64][]uint{2: {0, 1, 2}, 3: all, 6: {0, 1, 2}, 7: all}
			if suffix == TimeIndexFileSuffix {
				entrySize, low = timeIndexEntrySize, map[int64][]uint{6: {0, 1, 2, 3}, 7: all, 10: {0, 1, 2}, 11: all}
			}
			rebuilt, flips := 0, 0
			for off := int64(0); off < size; off++ {
				bits, ok := low[off%entrySize]
				if !ok {
					bits = []uint{uint(off*3) % 8}
				}
				for _, bit := range bits {
					for _, rp := range []int64{c.leo, 0} {
						if rp == 0 && (bit != bits[0] || off%5 != 0) {
							continue // everything is recovered anyway: sample
						}
						if rp != 0 {
							flips++
						}
						what := suffix + " byte " + fmt.Sprint(off) + " bit " + fmt.Sprint(bit) + " recovery point " + fmt.Sprint(rp)
						c.restore(t)
						crashFlipBit(t, path, off, bit)
						l, rep := crashOpen(t, what, c, OpenOptions{RecoveryPoint: rp})
						if rep.Cut != nil || len(rep.DeletedSegments) != 0 || l.LogEndOffset() != c.leo {
							t.Fatalf("%s: cut %+v, deleted %v, log end %d (want %d)", what, rep.Cut, rep.DeletedSegments, l.LogEndOffset(), c.leo)
						}
						if slices.Contains(rep.IndexesRebuilt, c.segBases[damagedSeg]) && rp != 0 {
							rebuilt++
						}
						if got := l.Segments(); !slices.Equal(got, c.segInfos) {
							// A wrong max timestamp would make retention delete early.
							t.Fatalf("%s: segments %+v, want %+v", what, got, c.segInfos)
						}
						crashCheckBatches(t, what, readAll(t, l), crashDatas(c.batches))
						crashCheckTimestamps(t, what, l, c.batches)
						crashClose(t, what, l)
					}
				}
			}
			t.Logf("%s: %d of %d flips made a trusted segment's indexes fail validation", suffix, rebuilt, flips)
		})
	}

	t.Run(LeaderEpochCheckpointFile, func(t *testing.T) {
		path := filepath.Join(c.dir, LeaderEpochCheckpointFile)
		size := int64(len(c.snap[LeaderEpochCheckpointFile]))
		if len(c.epochs) < 3 {
			t.Fatalf("leader epochs %v", c.epochs)
		}
		rebuilt, changed, flips := 0, 0, 0
		for off := int64(0); off < size; off++ {
			bits := []uint{0} // a digit's parity: often another valid number
			if b := uint(off*3) % 8; b != 0 {
				bits = append(bits, b)
			}
			for _, bit := range bits {
				flips++
				what := "checkpoint byte " + fmt.Sprint(off) + " bit " + fmt.Sprint(bit)
				c.restore(t)
				crashFlipBit(t, path, off, bit)
				l, rep := crashOpen(t, what, c, OpenOptions{RecoveryPoint: c.leo})
				if rep.Cut != nil || len(rep.DeletedSegments) != 0 || l.LogEndOffset() != c.leo {
					t.Fatalf("%s: cut %+v, deleted %v, log end %d (want %d)", what, rep.Cut, rep.DeletedSegments, l.LogEndOffset(), c.leo)
				}
				got := l.LeaderEpochs().Entries()
				if rep.LeaderEpochsRebuilt {
					rebuilt++
					if !slices.Equal(got, c.epochs) {
						t.Fatalf("%s: rebuilt leader epochs %v, want %v", what, got, c.epochs)
					}
				} else if !slices.Equal(got, c.epochs) {
					changed++ // a flip that still parses, such as a changed digit
				}
				for i := 1; i < len(got); i++ {
					if got[i].Epoch <= got[i-1].Epoch || got[i].StartOffset < got[i-1].StartOffset {
						t.Fatalf("%s: leader epochs not monotonic: %v", what, got)
					}
				}
				if n := len(got); n > 0 && got[n-1].StartOffset >= c.leo {
					t.Fatalf("%s: leader epoch starts past the log end: %v", what, got)
				}
				crashCheckBatches(t, what, readAll(t, l), crashDatas(c.batches))
				crashClose(t, what, l)
			}
		}
		t.Logf("checkpoint: %d flips rebuilt the cache, %d parsed as other valid epochs, of %d", rebuilt, changed, flips)
	})
}

// TestCrash_GarbageTail appends 4 KiB of zeros (a file extended but never written) or of
// random bytes to the active .log.
func TestCrash_GarbageTail(t *testing.T) {
	c := crashBuild(t, crashConfig(), []int{3, 4})
	active := len(c.segBases) - 1
	rnd := make([]byte, 4096)
	rand.New(rand.NewSource(42)).Read(rnd)
	for _, tc := range []struct {
		name string
		tail []byte
	}{
		{"zeros", make([]byte, 4096)},
		{"random", rnd},
		{"random after a torn header", append(slices.Clone(c.batches[0].data[:30]), rnd...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.restore(t)
			f, err := os.OpenFile(c.path(active, LogFileSuffix), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write(tc.tail); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			l, rep := crashOpen(t, tc.name, c, OpenOptions{RecoveryPoint: c.leo})
			defer crashClose(t, tc.name, l)
			if l.LogEndOffset() != c.leo {
				t.Fatalf("log end offset %d, want %d", l.LogEndOffset(), c.leo)
			}
			want := RecoveryCut{SegmentBaseOffset: c.segBases[active], Position: c.segSizes[active], Offset: c.leo, TruncatedBytes: int64(len(tc.tail))}
			if rep.Cut == nil {
				t.Fatal("garbage tail not reported")
			}
			got := *rep.Cut
			got.Reason = nil
			if got != want || rep.Cut.Reason == nil {
				t.Fatalf("cut %+v, want %+v with a reason", *rep.Cut, want)
			}
			t.Logf("reason: %v", rep.Cut.Reason)
			want2 := crashDatas(c.batches)
			crashCheckBatches(t, tc.name, readAll(t, l), want2)
			crashAppendOne(t, tc.name, l, want2, int32(active+1))
		})
	}
}

// TestCrash_IndexPointsPastEnd gives a trusted segment an offset index entry whose
// position lies past the end of its .log: the index must be rebuilt, not trusted.
func TestCrash_IndexPointsPastEnd(t *testing.T) {
	c := crashBuild(t, crashConfig(), []int{6, 3, 2})
	const seg = 0
	idx := c.snap[filepath.Base(c.path(seg, IndexFileSuffix))]
	if len(idx) < 2*offsetIndexEntrySize {
		t.Fatalf("index of %d bytes; want at least two entries", len(idx))
	}
	lastRel := binary.BigEndian.Uint32(idx[len(idx)-offsetIndexEntrySize:])
	past := uint32(c.segSizes[seg] + 100)
	for _, tc := range []struct {
		name  string
		index func() []byte
	}{
		{"last entry moved past the end", func() []byte {
			b := slices.Clone(idx)
			binary.BigEndian.PutUint32(b[len(b)-4:], past)
			return b
		}},
		{"extra entry past the end", func() []byte {
			return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(slices.Clone(idx), lastRel+1), past)
		}},
		{"first entry past the end", func() []byte {
			b := slices.Clone(idx)
			binary.BigEndian.PutUint32(b[4:], past)
			return b
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.restore(t)
			if err := os.WriteFile(c.path(seg, IndexFileSuffix), tc.index(), 0o644); err != nil {
				t.Fatal(err)
			}
			l, rep := crashOpen(t, tc.name, c, OpenOptions{RecoveryPoint: c.leo})
			defer crashClose(t, tc.name, l)
			if !slices.Contains(rep.IndexesRebuilt, c.segBases[seg]) {
				t.Fatalf("index not rebuilt: %+v", rep)
			}
			if rep.Cut != nil || len(rep.DeletedSegments) != 0 || l.LogEndOffset() != c.leo {
				t.Fatalf("cut %+v, deleted %v, log end %d (want %d)", rep.Cut, rep.DeletedSegments, l.LogEndOffset(), c.leo)
			}
			crashCheckBatches(t, tc.name, readAll(t, l), crashDatas(c.batches))
			crashCheckTimestamps(t, tc.name, l, c.batches)
			crashClose(t, tc.name, l)
			// The rebuilt index is the one the log wrote in the first place.
			if got, _ := os.ReadFile(c.path(seg, IndexFileSuffix)); !bytes.Equal(got, idx) {
				t.Fatalf("rebuilt index %x, want %x", got, idx)
			}
		})
	}
}

// TestCrash_MissingIndexes deletes a closed segment's index files: they are rebuilt.
func TestCrash_MissingIndexes(t *testing.T) {
	c := crashBuild(t, crashConfig(), []int{4, 6, 3})
	const seg = 1
	for _, tc := range []struct {
		name     string
		suffixes []string
	}{
		{"both", []string{IndexFileSuffix, TimeIndexFileSuffix}},
		{"offset index", []string{IndexFileSuffix}},
		{"time index", []string{TimeIndexFileSuffix}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.restore(t)
			for _, suffix := range tc.suffixes {
				if err := os.Remove(c.path(seg, suffix)); err != nil {
					t.Fatal(err)
				}
			}
			l, rep := crashOpen(t, tc.name, c, OpenOptions{RecoveryPoint: c.leo})
			if !slices.Equal(rep.IndexesRebuilt, []int64{c.segBases[seg], c.segBases[len(c.segBases)-1]}) {
				t.Fatalf("indexes rebuilt for %v, want the damaged and the last segment", rep.IndexesRebuilt)
			}
			if rep.Cut != nil || len(rep.DeletedSegments) != 0 || l.LogEndOffset() != c.leo {
				t.Fatalf("cut %+v, deleted %v, log end %d (want %d)", rep.Cut, rep.DeletedSegments, l.LogEndOffset(), c.leo)
			}
			crashCheckBatches(t, tc.name, readAll(t, l), crashDatas(c.batches))
			crashCheckTimestamps(t, tc.name, l, c.batches)
			crashClose(t, tc.name, l)
			for _, suffix := range []string{IndexFileSuffix, TimeIndexFileSuffix} {
				name := filepath.Base(c.path(seg, suffix))
				got, err := os.ReadFile(c.path(seg, suffix))
				if err != nil || !bytes.Equal(got, c.snap[name]) {
					t.Fatalf("rebuilt %s differs from the original (%v)", name, err)
				}
			}
		})
	}
}
