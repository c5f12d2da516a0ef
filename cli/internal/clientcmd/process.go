package clientcmd

import (
	"context"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	ucli "github.com/urfave/cli/v2"
)

// SignalContext is canceled on SIGINT or SIGTERM, so that long-running client commands
// (consume, produce from a terminal, perf) stop cleanly.
func SignalContext(parent context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}

// lockedWriter serialises writes from several goroutines (progress lines, kgo's logger).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// LockErrWriter makes the app's error stream safe for concurrent writers and returns
// it. Call it before NewClient so that the client's logger shares the lock.
func LockErrWriter(c *ucli.Context) io.Writer {
	if _, ok := c.App.ErrWriter.(*lockedWriter); !ok {
		c.App.ErrWriter = &lockedWriter{w: c.App.ErrWriter}
	}
	return c.App.ErrWriter
}
