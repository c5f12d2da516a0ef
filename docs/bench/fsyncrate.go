//go:build ignore

// Fsyncrate (go run docs/bench/fsyncrate.go) measures the raw fsynced sequential write rate of a disk: it appends
// --size bytes of random data to one file and fsyncs after every write, as a broker's
// log does with fsync before acknowledging, for --duration. With --writers N, N
// goroutines do so at once, each to a file of its own (as N brokers sharing the disk,
// or N partitions): mb_per_second is then their sum and per_writer_mb_per_second each
// one's. It prints MB/s (MiB, as Kafka's perf tools count), the fsync latency
// percentiles over every writer, and its own CPU time (user + system, from getrusage:
// the kernel's cost of the writes and fsyncs, as cpu_seconds_per_mb) as JSON. Used by
// docs/bench/replicated.sh and docs/bench/single-node.sh.
package main

import (
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"
)

// writer is one goroutine's result.
type writer struct {
	lat     []time.Duration
	written int64
	err     error
}

func main() {
	dir := flag.String("dir", os.TempDir(), "directory for the test files")
	size := flag.Int("size", 64<<10, "bytes per write")
	duration := flag.Duration("duration", 3*time.Second, "how long to write")
	writers := flag.Int("writers", 1, "goroutines writing at once, each to its own file")
	flag.Parse()
	if *size < 1 || *duration <= 0 || *writers < 1 {
		fmt.Fprintln(os.Stderr, "fsyncrate: --size, --duration and --writers must be positive")
		os.Exit(2)
	}
	buf := make([]byte, *size)
	rand.Read(buf)
	files := make([]*os.File, *writers)
	for i := range files {
		path := filepath.Join(*dir, fmt.Sprintf("fsyncrate-%d.dat", i))
		f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fsyncrate:", err)
			os.Exit(1)
		}
		defer os.Remove(path)
		files[i] = f
	}
	cpu0 := cpuSeconds()
	results := make([]writer, *writers)
	var wg sync.WaitGroup
	start := time.Now()
	for i, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &results[i]
			for time.Since(start) < *duration {
				t := time.Now()
				if _, r.err = f.Write(buf); r.err == nil {
					r.err = f.Sync()
				}
				if r.err != nil {
					return
				}
				r.lat = append(r.lat, time.Since(t))
				r.written += int64(len(buf))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := cpuSeconds() - cpu0
	var lat []time.Duration
	var written int64
	perWriter := make([]float64, *writers)
	for i, r := range results {
		if r.err != nil {
			fmt.Fprintln(os.Stderr, "fsyncrate:", r.err)
			os.Exit(1)
		}
		files[i].Close()
		lat = append(lat, r.lat...)
		written += r.written
		perWriter[i] = float64(r.written) / elapsed.Seconds() / (1 << 20)
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	mb := float64(written) / (1 << 20)
	json.NewEncoder(os.Stdout).Encode(map[string]any{
		"write_size":               *size,
		"writers":                  *writers,
		"writes":                   len(lat),
		"mb_per_second":            mb / elapsed.Seconds(),
		"per_writer_mb_per_second": perWriter,
		"p50_ms":                   pct(0.5),
		"p99_ms":                   pct(0.99),
		"cpu_seconds":              cpu,
		"cpu_seconds_per_mb":       cpu / max(mb, 1e-9),
	})
}

// cpuSeconds is the process's user + system CPU time so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}
