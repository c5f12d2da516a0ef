//go:build ignore

// Tcpstream (go build -o tcpstream docs/bench/tcpstream.go) is loopback TCP between two
// processes, so that the sender and the receiver can be pinned to cores (taskset) as a
// broker and its reader are. `tcpstream send` listens on 127.0.0.1:0, prints the port,
// accepts one connection and writes --write-size bytes at a time for --duration, cycling
// through a buffer of --span bytes (1 MiB: cache-hot, as `petrel perf loopback`; 1 GiB:
// cold memory, as a broker sending a log from the page cache), then closes it.
// `tcpstream recv PORT` reads until the sender closes and prints MB/s (MiB) as JSON,
// with its own CPU time (user + system, getrusage) per MB: what a broker's socket
// reads of a produced stream cost at least. Used by docs/bench/fetch.sh and
// docs/bench/single-node.sh.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: tcpstream send [flags] | tcpstream recv PORT")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "send":
		err = send(os.Args[2:])
	case "recv":
		err = recv(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tcpstream:", err)
		os.Exit(1)
	}
}

func send(args []string) error {
	fs := flag.NewFlagSet("send", flag.ExitOnError)
	d := fs.Duration("duration", 3*time.Second, "how long to send")
	size := fs.Int("write-size", 1<<20, "bytes per write")
	span := fs.Int("span", 1<<20, "bytes of the buffer the writes cycle through")
	_ = fs.Parse(args)
	if *size <= 0 || *span < *size {
		return fmt.Errorf("want 0 < --write-size <= --span")
	}
	buf := make([]byte, *span)
	for i := range buf {
		buf[i] = byte(i)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	c, err := ln.Accept()
	if err != nil {
		return err
	}
	defer c.Close()
	end := time.Now().Add(*d)
	for at := 0; time.Now().Before(end); at = (at + *size) % (*span - *size + 1) {
		if _, err := c.Write(buf[at : at+*size]); err != nil {
			return err
		}
	}
	return nil
}

func recv(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("recv takes the port")
	}
	c, err := net.Dial("tcp", "127.0.0.1:"+args[0])
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, 1<<20)
	cpu0 := cpuSeconds()
	start := time.Now()
	n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{c}, buf)
	if err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	cpu := cpuSeconds() - cpu0
	mb := float64(n) / (1 << 20)
	return json.NewEncoder(os.Stdout).Encode(map[string]float64{"mb_per_second": mb / secs, "bytes": float64(n), "elapsed_seconds": secs,
		"cpu_seconds": cpu, "cpu_seconds_per_mb": cpu / max(mb, 1e-9)})
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
