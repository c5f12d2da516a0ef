package cli

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
			&ucli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
		},
		Action: func(c *ucli.Context) error {
			mbps, err := measureLoopback(c.Context, c.Duration("duration"), c.Int("write-size"))
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return json.NewEncoder(c.App.Writer).Encode(map[string]float64{"mb_per_second": mbps})
			}
			_, err = fmt.Fprintf(c.App.Writer, "loopback TCP: %.1f MB/s (%d-byte writes, %s)\n", mbps, c.Int("write-size"), c.Duration("duration"))
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
