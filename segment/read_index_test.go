package segment

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"testing"
)

// TestReadByIndexMatchesScan checks that a Read that finds its end with the offset
// index returns exactly the whole batches a header-by-header scan finds, for every
// start offset, several size limits and high watermarks, with index entries for every
// batch, for some, and almost none.
func TestReadByIndexMatchesScan(t *testing.T) {
	for _, interval := range []int{1, 1024, 1 << 20} {
		cfg := DefaultConfig()
		cfg.SegmentBytes = 1 << 20 // one segment: a Read never crosses one
		cfg.IndexIntervalBytes = interval
		l, _ := openTestLog(t, cfg, OpenOptions{})
		rng := rand.New(rand.NewPCG(1, uint64(interval)))
		type batch struct{ pos, size, first, last int64 }
		var batches []batch
		var pos int64
		for i := range 100 {
			b := makeBatch(t, batchSpec{records: 1 + rng.IntN(6), valueSize: 10 + rng.IntN(700), seed: byte(i)})
			info, err := l.AppendAsLeader(b, 0)
			if err != nil {
				t.Fatal(err)
			}
			batches = append(batches, batch{pos, int64(len(b)), info.FirstOffset, info.LastOffset})
			pos += int64(len(b))
		}
		leo := l.LogEndOffset()
		for _, upTo := range []int64{leo, leo / 2} {
			for _, maxBytes := range []int{1, 1500, 4096, 20000, 1 << 30} {
				for off := int64(0); off < leo; off++ {
					// The scan's answer: the batch holding off, then more while they fit.
					i := 0
					for batches[i].last < off {
						i++
					}
					want := FileRange{Position: batches[i].pos, FirstOffset: batches[i].first, LastOffset: batches[i].last, Size: batches[i].size}
					if batches[i].last >= upTo {
						want = emptyRange
					}
					for j := i + 1; want.Size > 0 && j < len(batches) && batches[j].last < upTo && want.Size+batches[j].size <= int64(maxBytes); j++ {
						want.Size += batches[j].size
						want.LastOffset = batches[j].last
					}
					r, err := l.Read(off, maxBytes, upTo)
					if err != nil {
						t.Fatal(err)
					}
					r.Release()
					if r.Size != want.Size || r.FirstOffset != want.FirstOffset || r.LastOffset != want.LastOffset || (r.Size > 0 && r.Position != want.Position) {
						t.Fatalf("interval %d, Read(%d, %d, %d) = [%d, %d] at %d, %d bytes; want [%d, %d] at %d, %d bytes",
							interval, off, maxBytes, upTo, r.FirstOffset, r.LastOffset, r.Position, r.Size, want.FirstOffset, want.LastOffset, want.Position, want.Size)
					}
				}
			}
		}
	}
}

// BenchmarkReadSmallBatches is one fetch's Read of 1 MiB from a log of 16 KiB batches
// (a producer's default batch.size), walking the log from the start: the batch-header
// reads a Read needs to find where its range ends.
//
//	go test -run XXX -bench BenchmarkReadSmallBatches ./segment/
func BenchmarkReadSmallBatches(b *testing.B) {
	cfg := DefaultConfig()
	l, _ := openTestLog(b, cfg, OpenOptions{})
	batch := makeBatch(b, batchSpec{records: 15, valueSize: 1024})
	for range 2048 { // 32 MiB
		if _, err := l.AppendAsLeader(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
	leo := l.LogEndOffset()
	b.SetBytes(1 << 20)
	b.ResetTimer()
	off := int64(0)
	for range b.N {
		r, err := l.Read(off, 1<<20, leo)
		if err != nil || r.Size == 0 {
			b.Fatal(err, r.Size)
		}
		r.Release()
		if off = r.LastOffset + 1; off >= leo {
			off = 0
		}
	}
}

// TestReadByIndexSurvivesAWrongEntry checks that an index entry naming the wrong batch
// (an ordered but damaged index) makes a Read scan instead of trusting it: every Read
// still returns the whole batches that fit.
func TestReadByIndexSurvivesAWrongEntry(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.IndexIntervalBytes = 1 // an entry for every batch
	l, _ := openTestLog(t, cfg, OpenOptions{})
	var sizes, lasts []int64
	for i := range 40 {
		b := makeBatch(t, batchSpec{records: 2, valueSize: 100, seed: byte(i)})
		info, err := l.AppendAsLeader(b, 0)
		if err != nil {
			t.Fatal(err)
		}
		sizes, lasts = append(sizes, int64(len(b))), append(lasts, info.LastOffset)
	}
	// Entry 19 (batch 20's; batch 0 at position 0 has none) now points at batch 19's
	// start while keeping batch 20's offset.
	ix := l.segments[0].offsetIndex
	if ix.entries != 39 {
		t.Fatalf("%d index entries, want 39", ix.entries)
	}
	var wrong [4]byte // written to the file: the mapping is read-only
	binary.BigEndian.PutUint32(wrong[:], uint32(ix.at(18).position))
	f, err := os.OpenFile(ix.filePath(), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(wrong[:], 19*offsetIndexEntrySize+4); err != nil {
		t.Fatal(err)
	}
	f.Close()
	leo := l.LogEndOffset()
	for _, maxBytes := range []int{1, 1000, 2500, 1 << 20} {
		for off := int64(0); off < leo; off++ {
			first := int(off / 2)
			want := sizes[first]
			for j := first + 1; j < len(sizes) && want+sizes[j] <= int64(maxBytes); j++ {
				want += sizes[j]
			}
			r, err := l.Read(off, maxBytes, leo)
			if err != nil {
				t.Fatal(err)
			}
			r.Release()
			n := 0
			for s := int64(0); s < r.Size; n++ {
				s += sizes[first+n]
			}
			if r.Size != want || r.LastOffset != lasts[first+n-1] {
				t.Fatalf("Read(%d, %d) = %d bytes to offset %d, want %d bytes to %d", off, maxBytes, r.Size, r.LastOffset, want, lasts[first+n-1])
			}
		}
	}
}
