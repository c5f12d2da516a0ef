//go:build ignore

// Fsyncrate (go run docs/bench/fsyncrate.go) measures the raw fsynced sequential write rate of a disk: it appends
// --size bytes of random data to one file and fsyncs after every write, as a broker's
// log does with fsync before acknowledging, for --duration. It prints MB/s (MiB, as Kafka's perf tools count) and the
// fsync latency percentiles as JSON. Used by docs/bench/replicated.sh.
package main

import (
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

func main() {
	dir := flag.String("dir", os.TempDir(), "directory for the test file")
	size := flag.Int("size", 64<<10, "bytes per write")
	duration := flag.Duration("duration", 3*time.Second, "how long to write")
	flag.Parse()
	if *size < 1 || *duration <= 0 {
		fmt.Fprintln(os.Stderr, "fsyncrate: --size and --duration must be positive")
		os.Exit(2)
	}
	path := filepath.Join(*dir, "fsyncrate.dat")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fsyncrate:", err)
		os.Exit(1)
	}
	defer os.Remove(path)
	buf := make([]byte, *size)
	rand.Read(buf)
	var lat []time.Duration
	var written int64
	start := time.Now()
	for time.Since(start) < *duration {
		t := time.Now()
		if _, err := f.Write(buf); err == nil {
			err = f.Sync()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "fsyncrate:", err)
			os.Exit(1)
		}
		lat = append(lat, time.Since(t))
		written += int64(len(buf))
	}
	elapsed := time.Since(start)
	f.Close()
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	json.NewEncoder(os.Stdout).Encode(map[string]any{
		"write_size":    *size,
		"writes":        len(lat),
		"mb_per_second": float64(written) / elapsed.Seconds() / (1 << 20),
		"p50_ms":        pct(0.5),
		"p99_ms":        pct(0.99),
	})
}
