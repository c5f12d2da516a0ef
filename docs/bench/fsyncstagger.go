//go:build ignore

// Fsyncstagger (go run docs/bench/fsyncstagger.go) measures what a late start costs
// three replicas that fsync on one disk: each round, three goroutines append --size
// bytes to a file of their own and fsync it, the second 40 µs after the first and the
// third either with the second or --stagger after the first (as the broker's second
// follower receives a record later than the first). It prints, for each of --pairs
// alternations, the p50 and p90 of the time from the round's start until the third
// fsync returned.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"
)

func main() {
	dir := flag.String("dir", os.TempDir(), "directory for the test files")
	size := flag.Int("size", 1100, "bytes per append")
	stagger := flag.Duration("stagger", 200*time.Microsecond, "how late the third fsync starts")
	rounds := flag.Int("rounds", 600, "rounds per measurement")
	pairs := flag.Int("pairs", 3, "alternations of together and staggered")
	flag.Parse()
	buf := make([]byte, *size)
	for range *pairs {
		for _, late := range []time.Duration{40 * time.Microsecond, *stagger} {
			var files [3]*os.File
			for i := range files {
				f, err := os.CreateTemp(*dir, "fsyncstagger-")
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
				files[i] = f
			}
			var ends []time.Duration
			for n := range *rounds {
				start := time.Now()
				var wg sync.WaitGroup
				var third time.Duration
				for i, f := range files {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for time.Since(start) < []time.Duration{0, 40 * time.Microsecond, late}[i] {
						}
						if _, err := f.WriteAt(buf, int64(n*len(buf))); err == nil {
							_ = f.Sync()
						}
						if i == 2 {
							third = time.Since(start)
						}
					}()
				}
				wg.Wait()
				ends = append(ends, third)
				time.Sleep(200 * time.Microsecond)
			}
			for _, f := range files {
				f.Close()
				os.Remove(f.Name())
			}
			slices.Sort(ends)
			fmt.Printf("third fsync starts %v after the first: it returns at p50 %d µs, p90 %d µs\n",
				late, ends[len(ends)/2].Microseconds(), ends[len(ends)*9/10].Microseconds())
		}
	}
}
