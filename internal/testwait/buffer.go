package testwait

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer collects what a logger or a process writes while a test reads it and waits
// for lines in it: a bytes.Buffer safe for concurrent use. The zero value is empty and
// ready.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer // guarded by mu
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Line returns the first line written that holds every one of parts, or "".
func (b *Buffer) Line(parts ...string) string {
	for _, l := range strings.Split(b.String(), "\n") {
		found := true
		for _, p := range parts {
			found = found && strings.Contains(l, p)
		}
		if found {
			return l
		}
	}
	return ""
}
