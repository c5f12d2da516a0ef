//go:build ignore

// Replicadirs (go run docs/bench/replicadirs.go) measures what a directory per replica
// costs on a disk, with no broker work. "create" is the mkdir of each directory (Kafka
// makes one per new replica; Petrel makes it at the replica's first write, DESIGN.md
// S13); "metadata_file" then writes each partition.metadata (what a restart of written
// replicas finds); "list" lists the folder once (a start does). "reopen" is a restart's
// open of an existing replica without records: partition.metadata opened and read, the
// directory opened and listed. It
// runs --workers at once (the broker's replicaOpeners) over --replicas directories
// in one folder, and prints the seconds and CPU-seconds of each step as JSON.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

func main() {
	dir := flag.String("dir", os.TempDir(), "folder to make the replica directories in")
	replicas := flag.Int("replicas", 33334, "replica directories")
	workers := flag.Int("workers", 8, "directories handled at once")
	flag.Parse()
	root, err := os.MkdirTemp(*dir, "replicadirs-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(root)
	name := func(i int) string { return filepath.Join(root, fmt.Sprintf("t%d-%d", i/1000, i%1000)) }
	run := func(step func(string) error) (float64, float64) {
		var before, after syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &before)
		start := time.Now()
		jobs := make(chan int)
		var wg sync.WaitGroup
		for range *workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range jobs {
					if err := step(name(i)); err != nil {
						fmt.Fprintln(os.Stderr, err)
						os.Exit(1)
					}
				}
			}()
		}
		for i := range *replicas {
			jobs <- i
		}
		close(jobs)
		wg.Wait()
		secs := time.Since(start).Seconds()
		syscall.Getrusage(syscall.RUSAGE_SELF, &after)
		cpu := func(r syscall.Rusage) float64 {
			return float64(r.Utime.Sec+r.Stime.Sec) + float64(r.Utime.Usec+r.Stime.Usec)/1e6
		}
		return secs, cpu(after) - cpu(before)
	}
	createS, createCPU := run(func(d string) error { return os.Mkdir(d, 0o755) })
	writeS, writeCPU := run(func(d string) error { // a restart finds the file (not timed as a broker step)
		return os.WriteFile(filepath.Join(d, "partition.metadata"), []byte("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n"), 0o644)
	})
	listStart := time.Now()
	ents, err := os.ReadDir(root) // a start lists the log directory once
	if err != nil || len(ents) != *replicas {
		fmt.Fprintln(os.Stderr, "listing:", len(ents), err)
		os.Exit(1)
	}
	listS := time.Since(listStart).Seconds()
	reopenS, reopenCPU := run(func(d string) error {
		b, err := os.ReadFile(filepath.Join(d, "partition.metadata"))
		if err != nil || len(b) == 0 {
			return fmt.Errorf("%s: %v", d, err)
		}
		f, err := os.Open(d)
		if err != nil {
			return err
		}
		_, err = f.Readdirnames(-1)
		f.Close()
		return err
	})
	json.NewEncoder(os.Stdout).Encode(map[string]any{"replicas": *replicas, "workers": *workers,
		"create_s": createS, "create_cpu_s": createCPU, "metadata_file_s": writeS, "metadata_file_cpu_s": writeCPU, "list_s": listS, "reopen_s": reopenS, "reopen_cpu_s": reopenCPU})
}
