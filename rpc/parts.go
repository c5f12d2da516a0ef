package rpc

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FileSection is a byte range of an open file that a response carries without
// reading it into memory: on a plain TCP connection it leaves by sendfile (send.go).
type FileSection struct {
	File   *os.File
	Offset int64 // byte position in File
	Size   int64 // bytes
}

// Parts is an encoded response made of bytes interleaved with file sections: the
// encoder appends to B and calls AddSection where a section's bytes belong.
type Parts struct {
	// B holds every encoded byte of the frame, sections excluded.
	B []byte
	// cuts places each section after B[:cut.at], in order.
	cuts []partCut
	// sectionBytes is the sum of the sections' sizes.
	sectionBytes int64
	// pending is writeParts' scratch list of byte runs, kept for reuse.
	pending [][]byte
}

type partCut struct {
	at  int
	sec FileSection
}

// AddSection puts s at the current end of B. Empty sections are dropped.
func (p *Parts) AddSection(s FileSection) {
	if s.Size <= 0 {
		return
	}
	p.cuts = append(p.cuts, partCut{at: len(p.B), sec: s})
	p.sectionBytes += s.Size
}

// Len is the frame's length in bytes: B plus every section.
func (p *Parts) Len() int64 { return int64(len(p.B)) + p.sectionBytes }

// AppendFlat appends the frame's bytes to dst with every section read in place: what
// the receiver gets.
func (p *Parts) AppendFlat(dst []byte) ([]byte, error) {
	at := 0
	for _, c := range p.cuts {
		dst = append(dst, p.B[at:c.at]...)
		at = c.at
		n := len(dst)
		dst = append(dst, make([]byte, c.sec.Size)...)
		if _, err := c.sec.File.ReadAt(dst[n:], c.sec.Offset); err != nil {
			return nil, fmt.Errorf("%w: %s at %d: %w", ErrShortSection, c.sec.File.Name(), c.sec.Offset, err)
		}
	}
	return append(dst, p.B[at:]...), nil
}

// reset empties p for reuse, keeping its buffers.
func (p *Parts) reset() {
	p.B = p.B[:0]
	clear(p.cuts)
	p.cuts = p.cuts[:0]
	p.sectionBytes = 0
}

// PartsResponse is a response that encodes itself as Parts, so that large byte
// ranges of files (Fetch record sets) are sent without a copy through user space.
// The writer sets the version and throttle as for any response, then calls
// AppendParts once to encode the body (everything after the response header) at the
// response's version, writes the frame, and calls Release whether or not the write
// succeeded. A PartsResponse dropped unwritten (its connection closed first) is not
// released by rpc: the implementation must free its resources on its own then (for
// example with runtime.AddCleanup). Its AppendTo must give the same bytes as
// AppendParts with every section read in place.
type PartsResponse interface {
	kmsg.Response
	AppendParts(p *Parts)
	Release()
}

// buildParts encodes resp's frame into p: the size, the response header and the body.
func buildParts(p *Parts, correlationID int32, resp PartsResponse) error {
	p.B = append(p.B, 0, 0, 0, 0) // size, filled in below
	p.B = binary.BigEndian.AppendUint32(p.B, uint32(correlationID))
	if resp.IsFlexible() && resp.Key() != apiVersionsKey {
		p.B = append(p.B, 0)
	}
	resp.AppendParts(p)
	size := p.Len() - 4
	if size > math.MaxInt32 {
		return fmt.Errorf("%w: %s response of %d bytes", ErrBadResult, kmsg.NameForKey(resp.Key()), size)
	}
	binary.BigEndian.PutUint32(p.B, uint32(size))
	return nil
}

// partsPool holds Parts for reuse by the writers.
var partsPool = sync.Pool{New: func() any { return &Parts{B: make([]byte, 0, 4096)} }}

func getParts() *Parts { return partsPool.Get().(*Parts) }

// putParts returns p to the pool unless its buffer grew too large.
func putParts(p *Parts) {
	if cap(p.B) > maxPooledBuffer || cap(p.cuts) > 1<<14 {
		return
	}
	p.reset()
	partsPool.Put(p)
}
