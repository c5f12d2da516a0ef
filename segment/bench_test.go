package segment

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Benchmarks of the log against plain file I/O of the same bytes in the same chunks.
//
//	go test -run XXX -bench . -benchtime 2s -count 3 ./segment/
//
// Neither side fsyncs (the log does not by default). Writers start a fresh file (or log)
// every benchRotateBytes, outside the timer, so that a long run does not fill the disk.
//
// Append vs RawWrite and Read vs RawRead are the comparisons; RawWriteCRC, ReadReuse and
// RawReadAlloc split the differences (the CRC-32C check; FileRange.Bytes' allocation), and
// AppendVsRawWrite measures the append/raw ratio with both interleaved, for busy machines.

const (
	benchRotateBytes = 256 << 20
	benchReadFill    = 64 << 20 // bytes of batches the read benchmarks read over
	benchReadMax     = 1 << 20  // maxBytes of each Read
)

// benchSizes are batches of 1 KiB random records: 16 KiB and 1 MiB of values.
var benchSizes = []struct {
	name    string
	records int
}{{"16KiB", 16}, {"1MiB", 1024}}

func benchBatch(b *testing.B, records int) []byte {
	return makeBatch(b, batchSpec{records: records, valueSize: 1024, baseTimestamp: 1_700_000_000_000, tsStep: 1, random: true})
}

// benchLogs opens logs with DefaultConfig in fresh directories under a temporary root,
// deleting the previous one.
type benchLogs struct {
	b    *testing.B
	root string
	n    int
	l    *Log
}

func (bl *benchLogs) next() *Log {
	if bl.l != nil {
		if err := bl.l.Delete(); err != nil {
			bl.b.Fatal(err)
		}
	}
	bl.n++
	l, _, err := Open(filepath.Join(bl.root, fmt.Sprint(bl.n)), DefaultConfig(), OpenOptions{})
	if err != nil {
		bl.b.Fatal(err)
	}
	bl.l = l
	return l
}

func BenchmarkAppend(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			// AppendAsLeader rewrites baseOffset and the epoch in place; reusing the batch
			// just gives it new offsets each time.
			batch := benchBatch(b, sz.records)
			logs := &benchLogs{b: b, root: b.TempDir()}
			l := logs.next()
			written := 0
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if written+len(batch) > benchRotateBytes {
					b.StopTimer()
					l, written = logs.next(), 0
					b.StartTimer()
				}
				if _, err := l.AppendAsLeader(batch, 1); err != nil {
					b.Fatal(err)
				}
				written += len(batch)
			}
			b.StopTimer()
			if err := l.Delete(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

func BenchmarkRawWrite(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			batch := benchBatch(b, sz.records)
			root := b.TempDir()
			n := 0
			var f *os.File
			next := func() {
				if f != nil {
					f.Close()
					if err := os.Remove(f.Name()); err != nil {
						b.Fatal(err)
					}
				}
				n++
				var err error
				if f, err = os.Create(filepath.Join(root, fmt.Sprint(n))); err != nil {
					b.Fatal(err)
				}
			}
			next()
			written := 0
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if written+len(batch) > benchRotateBytes {
					b.StopTimer()
					next()
					written = 0
					b.StartTimer()
				}
				if _, err := f.Write(batch); err != nil {
					b.Fatal(err)
				}
				written += len(batch)
			}
			b.StopTimer()
			f.Close()
		})
	}
}

// benchReadLog fills a log with about benchReadFill bytes of sz batches, a whole number of
// benchReadMax reads, and returns it with the byte ranges its Reads return, in order.
func benchReadLog(b *testing.B, records int) (*Log, []FileRange) {
	b.Helper()
	batch := benchBatch(b, records)
	perRead := max(benchReadMax/len(batch), 1)
	reads := max(benchReadFill/(perRead*len(batch)), 1)
	logs := &benchLogs{b: b, root: b.TempDir()}
	l := logs.next()
	b.Cleanup(func() { l.Delete() })
	for range reads * perRead {
		if _, err := l.AppendAsLeader(batch, 1); err != nil {
			b.Fatal(err)
		}
	}
	var ranges []FileRange
	for off := int64(0); off < l.LogEndOffset(); {
		r, err := l.Read(off, benchReadMax, l.LogEndOffset())
		if err != nil {
			b.Fatal(err)
		}
		if r.Size != int64(perRead*len(batch)) {
			b.Fatalf("read at %d returned %d bytes, want %d", off, r.Size, perRead*len(batch))
		}
		ranges = append(ranges, r)
		off = r.LastOffset + 1
	}
	return l, ranges
}

func BenchmarkRead(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			l, ranges := benchReadLog(b, sz.records)
			leo := l.LogEndOffset()
			b.SetBytes(ranges[0].Size)
			b.ReportAllocs()
			b.ResetTimer()
			off := int64(0)
			for i := 0; i < b.N; i++ {
				r, err := l.Read(off, benchReadMax, leo)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := r.Bytes(); err != nil {
					b.Fatal(err)
				}
				if off = r.LastOffset + 1; off == leo {
					off = 0
				}
			}
		})
	}
}

// BenchmarkRawRead reads the same .log file in the same byte ranges as BenchmarkRead, with
// ReadAt into one reused buffer.
func BenchmarkRawRead(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			l, ranges := benchReadLog(b, sz.records)
			f, err := os.Open(ranges[0].File.Name())
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, ranges[0].Size)
			b.SetBytes(ranges[0].Size)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := f.ReadAt(buf, ranges[i%len(ranges)].Position); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadReuse is BenchmarkRead copying each range into one reused buffer instead of
// FileRange.Bytes' new slice: the log's own read overhead, without the allocation.
func BenchmarkReadReuse(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			l, ranges := benchReadLog(b, sz.records)
			leo := l.LogEndOffset()
			buf := make([]byte, ranges[0].Size)
			b.SetBytes(ranges[0].Size)
			b.ReportAllocs()
			b.ResetTimer()
			off := int64(0)
			for i := 0; i < b.N; i++ {
				r, err := l.Read(off, benchReadMax, leo)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := r.File.ReadAt(buf[:r.Size], r.Position); err != nil {
					b.Fatal(err)
				}
				if off = r.LastOffset + 1; off == leo {
					off = 0
				}
			}
		})
	}
}

// BenchmarkRawReadAlloc is BenchmarkRawRead with a new slice per read, as FileRange.Bytes
// allocates: the cost of the allocation alone.
func BenchmarkRawReadAlloc(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			l, ranges := benchReadLog(b, sz.records)
			f, err := os.Open(ranges[0].File.Name())
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(ranges[0].Size)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				buf := make([]byte, ranges[i%len(ranges)].Size)
				if _, err := f.ReadAt(buf, ranges[i%len(ranges)].Position); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRawWriteCRC is BenchmarkRawWrite plus the CRC-32C check every append makes (as
// Kafka's does): the least an append can cost.
func BenchmarkRawWriteCRC(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			batch := benchBatch(b, sz.records)
			root := b.TempDir()
			n := 0
			var f *os.File
			next := func() {
				if f != nil {
					f.Close()
					if err := os.Remove(f.Name()); err != nil {
						b.Fatal(err)
					}
				}
				n++
				var err error
				if f, err = os.Create(filepath.Join(root, fmt.Sprint(n))); err != nil {
					b.Fatal(err)
				}
			}
			next()
			want := binary.BigEndian.Uint32(batch[offsetCRC:])
			written := 0
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if written+len(batch) > benchRotateBytes {
					b.StopTimer()
					next()
					written = 0
					b.StartTimer()
				}
				if crc32.Checksum(batch[offsetAttributes:], castagnoli) != want {
					b.Fatal("CRC mismatch")
				}
				if _, err := f.Write(batch); err != nil {
					b.Fatal(err)
				}
				written += len(batch)
			}
			b.StopTimer()
			f.Close()
		})
	}
}

// BenchmarkAppendVsRawWrite alternates an AppendAsLeader and a plain Write of the same
// batch, each to its own directory, and reports append throughput as a fraction of the raw
// write's ("append/raw"): on a busy machine the pair sees the same load, so the ratio is
// steadier than one computed from separate benchmarks.
func BenchmarkAppendVsRawWrite(b *testing.B) {
	for _, sz := range benchSizes {
		b.Run(sz.name, func(b *testing.B) {
			batch := benchBatch(b, sz.records)
			logs := &benchLogs{b: b, root: b.TempDir()}
			l := logs.next()
			rawDir := b.TempDir()
			n := 0
			var f *os.File
			nextRaw := func() {
				if f != nil {
					f.Close()
					if err := os.Remove(f.Name()); err != nil {
						b.Fatal(err)
					}
				}
				n++
				var err error
				if f, err = os.Create(filepath.Join(rawDir, fmt.Sprint(n))); err != nil {
					b.Fatal(err)
				}
			}
			nextRaw()
			var appendTime, rawTime time.Duration
			written := 0
			b.SetBytes(2 * int64(len(batch)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if written+len(batch) > benchRotateBytes {
					b.StopTimer()
					l = logs.next()
					nextRaw()
					written = 0
					b.StartTimer()
				}
				t0 := time.Now()
				if _, err := f.Write(batch); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if _, err := l.AppendAsLeader(batch, 1); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				rawTime += t1.Sub(t0)
				appendTime += t2.Sub(t1)
				written += len(batch)
			}
			b.StopTimer()
			b.ReportMetric(float64(rawTime)/float64(appendTime), "append/raw")
			f.Close()
			if err := l.Delete(); err != nil {
				b.Fatal(err)
			}
		})
	}
}
