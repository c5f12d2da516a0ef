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
// platform supports it (sendfile_linux.go), otherwise (TLS, pipes, other platforms)
// read through a pooled buffer and written.
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
			if err := w.flush(); err != nil {
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
// as possible; the pending bytes alias the Parts buffer until a section must be copied
// after them.
type partsWriter struct {
	nc      net.Conn
	pending [][]byte
	chunk   *[]byte
	// chunkPending: pending holds the chunk, which must be written before it is
	// filled again. A small section's bytes thus leave in one write with the frame
	// bytes before and after them: one system call and, with TCP_NODELAY, one segment
	// for a small fetch answer (a follower's one-record fetch), not two.
	chunkPending bool
	writes       int // flushes that wrote something
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
	clear(w.pending)
	w.pending = w.pending[:0]
	w.chunkPending = false
	return err
}

// copySection reads s through the pooled buffer and queues it after the pending bytes.
func (w *partsWriter) copySection(s FileSection) error {
	if w.chunk == nil {
		w.chunk = chunkPool.Get().(*[]byte)
	}
	for done := int64(0); done < s.Size; {
		if w.chunkPending { // the chunk is reused: write it first
			if err := w.flush(); err != nil {
				return err
			}
		}
		n := int(min(s.Size-done, copyChunk))
		buf := (*w.chunk)[:n]
		if _, err := s.File.ReadAt(buf, s.Offset+done); err != nil {
			if err == io.EOF {
				return fmt.Errorf("%w: %s at %d: %d of %d bytes", ErrShortSection, s.File.Name(), s.Offset, done, s.Size)
			}
			return err
		}
		w.add(buf)
		w.chunkPending = true
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
