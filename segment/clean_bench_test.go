package segment

import (
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// cleanBenchLog writes a log of 1 KiB records with random (incompressible) values, 10 %
// of them unique keys (each key written ten times), in batches of 16, then rolls so
// that all of it is cleanable.
func cleanBenchLog(b *testing.B, dir string, totalBytes int) *Log {
	b.Helper()
	cfg := DefaultConfig()
	cfg.Compacted = true
	cfg.SegmentBytes = 16 << 20
	l, _, err := Open(dir, cfg, OpenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	records := totalBytes / 1024
	keys := records / 10
	values := make([]byte, 16*1000)
	for i := 0; i < records; i += 16 {
		if _, err := rand.Read(values); err != nil {
			b.Fatal(err)
		}
		var recs []kv
		for j := i; j < i+16; j++ {
			at := (j - i) * 1000
			recs = append(recs, kv{[]byte(fmt.Sprintf("key-%08d", j%keys)), values[at : at+1000]})
		}
		if _, err := l.AppendAsLeader(keyedBatch(b, recs, 0, int64(i), -1, 0), 0); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Roll(); err != nil {
		b.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
	return l
}

const cleanBenchBytes = 64 << 20

// BenchmarkCleanPass is one cleaning pass over 8 MiB of dirty log, as BenchmarkClean:
// the cleaner's hot path at a size `petrel perf regress` runs in well under a second,
// with its allocations (docs/bench/allocs.txt).
func BenchmarkCleanPass(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		l := cleanBenchLog(b, dir, 8<<20)
		b.SetBytes(l.Size())
		b.StartTimer()
		cleanBenchPass(b, l)
		b.StopTimer()
		l.Close()
		os.RemoveAll(dir)
		b.StartTimer()
	}
}

// cleanBenchPass prepares, builds and commits one cleaning of all of l.
func cleanBenchPass(b *testing.B, l *Log) CleanResult {
	p, err := l.PrepareClean(CleanOptions{UncleanableOffset: l.LogEndOffset(), MaxMapBytes: 128 << 20})
	if err != nil || p == nil {
		b.Fatal(p, err)
	}
	if err := p.Build(); err != nil {
		b.Fatal(err)
	}
	res, err := l.CommitClean(p)
	if err != nil {
		b.Fatal(err)
	}
	return res
}

// BenchmarkClean is one full cleaning pass over 64 MiB of dirty log (1 KiB records,
// 10 % unique keys); MB/s is dirty bytes per second on one core.
func BenchmarkClean(b *testing.B) {
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		l := cleanBenchLog(b, dir, cleanBenchBytes)
		b.SetBytes(l.Size())
		b.StartTimer()
		res := cleanBenchPass(b, l)
		b.StopTimer()
		b.ReportMetric(float64(res.BytesWritten)/float64(res.BytesRead), "written/read")
		l.Close()
		os.RemoveAll(dir)
		b.StartTimer()
	}
}

// BenchmarkCleanRawReadWrite reads the same log's segment files sequentially and
// writes a tenth of their bytes (what the cleaner keeps) to a new file with an fsync:
// the I/O floor of BenchmarkClean, in the same run.
func BenchmarkCleanRawReadWrite(b *testing.B) {
	dir := b.TempDir()
	l := cleanBenchLog(b, dir, cleanBenchBytes)
	size := l.Size()
	l.Close()
	names, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	buf := make([]byte, 256<<10)
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := os.Create(filepath.Join(dir, "out.raw"))
		if err != nil {
			b.Fatal(err)
		}
		var n int64
		for _, name := range names {
			f, err := os.Open(name)
			if err != nil {
				b.Fatal(err)
			}
			for {
				m, err := f.Read(buf)
				n += int64(m)
				if n%(10*int64(len(buf))) < int64(m) {
					out.Write(buf[:m])
				}
				if err == io.EOF {
					break
				}
			}
			f.Close()
		}
		out.Sync()
		out.Close()
	}
}
