package perf

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"time"

	ucli "github.com/urfave/cli/v2"
)

// perfLoopbackCommand measures raw TCP throughput over 127.0.0.1: the ceiling any
// broker on this machine can reach, so that broker figures can be quoted as ratios
// against a baseline measured in the same run.
func perfLoopbackCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "loopback",
		Usage: "measure raw TCP bandwidth on 127.0.0.1, the baseline for broker figures",
		Flags: []ucli.Flag{
			&ucli.DurationFlag{Name: "duration", Usage: "how long to send", Value: 3 * time.Second},
			&ucli.IntFlag{Name: "write-size", Usage: "bytes per write", Value: 1 << 20},
			&ucli.IntFlag{Name: "response-size", Usage: "request/response mode: the receiver asks for this many bytes, reads them, then asks again, as a consumer with one fetch in flight does (0: one stream)"},
			&ucli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
		},
		Action: func(c *ucli.Context) error {
			d, size := c.Duration("duration"), c.Int("response-size")
			var mbps float64
			var err error
			var what string
			switch {
			case size < 0:
				return fmt.Errorf("bad --response-size %d", size)
			case size > 0:
				mbps, err = measureLoopbackRequests(c.Context, d, size)
				what = fmt.Sprintf("%d-byte responses, one request in flight", size)
			default:
				mbps, err = measureLoopback(c.Context, d, c.Int("write-size"))
				what = fmt.Sprintf("%d-byte writes", c.Int("write-size"))
			}
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return json.NewEncoder(c.App.Writer).Encode(map[string]float64{"mb_per_second": mbps})
			}
			_, err = fmt.Fprintf(c.App.Writer, "loopback TCP: %.1f MB/s (%s, %s)\n", mbps, what, d)
			return err
		},
	}
}

// measureLoopback streams writeSize-byte writes from one socket to another on
// 127.0.0.1 for d and returns MB/s (MB = 1024²) as received.
func measureLoopback(ctx context.Context, d time.Duration, writeSize int) (float64, error) {
	if d <= 0 || writeSize <= 0 {
		return 0, fmt.Errorf("--duration and --write-size must be positive")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	received := make(chan int64, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			received <- 0
			return
		}
		defer conn.Close()
		n, _ := io.Copy(io.Discard, conn)
		received <- n
	}()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		return 0, err
	}
	buf := make([]byte, writeSize)
	start := time.Now()
	deadline := start.Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if _, err := conn.Write(buf); err != nil {
			conn.Close()
			return 0, err
		}
	}
	conn.Close()
	n := <-received
	elapsed := time.Since(start).Seconds()
	return float64(n) / (1 << 20) / elapsed, nil
}

// loopbackRequestBytes is the size of a request in request/response mode (about a
// Fetch request's).
const loopbackRequestBytes = 100

// measureLoopbackRequests is measureLoopback in request/response mode: the receiver
// writes a small request, the sender answers with responseSize bytes in one write,
// and the receiver reads them all into one reused buffer before asking again. It is
// the ceiling of any client with one fetch in flight on this machine.
func measureLoopbackRequests(ctx context.Context, d time.Duration, responseSize int) (float64, error) {
	if d <= 0 {
		return 0, fmt.Errorf("--duration must be positive")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		req, resp := make([]byte, loopbackRequestBytes), make([]byte, responseSize)
		for {
			if _, err := io.ReadFull(conn, req); err != nil {
				return
			}
			if _, err := conn.Write(resp); err != nil {
				return
			}
		}
	}()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	req, resp := make([]byte, loopbackRequestBytes), make([]byte, responseSize)
	var n int64
	start := time.Now()
	deadline := start.Add(d)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if _, err := conn.Write(req); err != nil {
			return 0, err
		}
		if _, err := io.ReadFull(conn, resp); err != nil {
			return 0, err
		}
		n += int64(responseSize)
	}
	return float64(n) / (1 << 20) / time.Since(start).Seconds(), nil
}
