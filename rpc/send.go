package rpc

import (
	"fmt"
	"io"
	"net"
	"sync"
)

// sendfileMinBytes is the smallest file section sent by sendfile; smaller ones are
// read into the frame's buffer, which costs less than the extra system calls. Tests
// set it to 1 to send every section by sendfile.
var sendfileMinBytes int64 = 32 << 10

// copyChunk is the buffer size of the copying path.
const copyChunk = 256 << 10

// chunkPool holds the copying path's buffers.
var chunkPool = sync.Pool{New: func() any { b := make([]byte, copyChunk); return &b }}

// writeParts writes a frame of bytes and file sections to nc. This is the one place
// that chooses how sections travel: by sendfile on a plain *net.TCPConn where the
// platform supports it (sendfile_linux.go), otherwise (TLS, pipes, other platforms,
// sections under sendfileMinBytes) read through a pooled buffer and written. The bytes
// before a sendfile section leave flagged as "more to come" (MSG_MORE), so that they
// share the section's first packet instead of being pushed alone, and copied sections
// fill the buffer before it is written, so that a response of many small partitions
// costs a few writes rather than one per partition.
func writeParts(nc net.Conn, p *Parts) error {
	tc, direct := nc.(*net.TCPConn)
	direct = direct && sendfileSupported
	w := partsWriter{nc: nc, pending: p.pending[:0]}
	defer func() { p.pending = w.pending[:0]; w.free() }()
	at := 0
	for _, c := range p.cuts {
		w.add(p.B[at:c.at])
		at = c.at
		if direct && c.sec.Size >= sendfileMinBytes {
			if err := w.flushMore(tc); err != nil {
				return err
			}
			if err := sendFile(tc, c.sec); err != nil {
				return err
			}
			continue
		}
		if err := w.copySection(c.sec); err != nil {
			return err
		}
	}
	w.add(p.B[at:])
	err := w.flush()
	if testHookPartsWrites != nil {
		testHookPartsWrites(w.writes)
	}
	return err
}

// testHookPartsWrites, when set by a test, is told how many writes (each one write or
// writev system call on a TCP connection) writeParts made, sendfile calls not counted.
var testHookPartsWrites func(int)

// partsWriter gathers the bytes between sections so that they leave in as few writes
// as possible; the pending bytes alias the Parts buffer and the first used bytes of
// chunk until they are written.
type partsWriter struct {
	nc      net.Conn
	pending [][]byte
	chunk   *[]byte
	used    int // bytes of chunk held by pending
	writes  int // writes made (flush and flushMore calls that wrote something)
}

func (w *partsWriter) add(b []byte) {
	if len(b) > 0 {
		w.pending = append(w.pending, b)
	}
}

// flush writes the pending bytes with one vectored write.
func (w *partsWriter) flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	w.writes++
	var err error
	switch len(w.pending) {
	case 1: // the usual case (the bytes before a sendfile section): no writev, no allocation
		_, err = w.nc.Write(w.pending[0])
	default:
		bufs := net.Buffers(w.pending)
		_, err = bufs.WriteTo(w.nc)
	}
	w.reset()
	return err
}

// flushMore writes the pending bytes on tc as flush does, but when they are one run
// (the usual case: the bytes before a sendfile section) it tells the kernel that more
// follows at once, so that they are not pushed in a packet of their own.
func (w *partsWriter) flushMore(tc *net.TCPConn) error {
	if len(w.pending) != 1 {
		return w.flush()
	}
	err := sendMore(tc, w.pending[0])
	w.writes++
	w.reset()
	return err
}

func (w *partsWriter) reset() {
	clear(w.pending)
	w.pending = w.pending[:0]
	w.used = 0
}

// copySection reads s into the free part of the pooled buffer and queues it after the
// pending bytes, writing everything pending whenever the buffer is full.
func (w *partsWriter) copySection(s FileSection) error {
	if w.chunk == nil {
		w.chunk = chunkPool.Get().(*[]byte)
	}
	for done := int64(0); done < s.Size; {
		if w.used == copyChunk {
			if err := w.flush(); err != nil { // the chunk is reused: write it now
				return err
			}
		}
		n := int(min(s.Size-done, int64(copyChunk-w.used)))
		buf := (*w.chunk)[w.used : w.used+n]
		if _, err := s.File.ReadAt(buf, s.Offset+done); err != nil {
			if err == io.EOF {
				return fmt.Errorf("%w: %s at %d: %d of %d bytes", ErrShortSection, s.File.Name(), s.Offset, done, s.Size)
			}
			return err
		}
		w.add(buf)
		w.used += n
		done += int64(n)
	}
	return nil
}

func (w *partsWriter) free() {
	if w.chunk != nil {
		chunkPool.Put(w.chunk)
		w.chunk = nil
	}
}
