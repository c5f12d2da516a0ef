package compress

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
)

// Snappy as Kafka's clients write it: the xerial framing of Java's SnappyOutputStream
// (a 16-byte header, then blocks each an int32 compressed length and a raw snappy
// block), and raw snappy, which older clients wrote and every consumer reads.

// xerialMagic starts snappy in the xerial framing: the magic, then an int32 version
// and an int32 minimum compatible version.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderSize = 16

// xerialBlockSize is the input of one snappy block in the xerial framing, as Java's
// SnappyOutputStream writes it.
const xerialBlockSize = 32 << 10

// snappyReader decodes raw snappy or the xerial framing block by block.
type snappyReader struct {
	src      []byte // compressed bytes not yet decoded
	xerial   bool
	out      []byte // the block buffer, reused
	rest     []byte // decoded, not yet read
	produced int64
	limit    int64
}

func (r *snappyReader) reset(compressed []byte, limit int64) {
	r.src, r.rest, r.produced, r.limit = compressed, nil, 0, limit
	r.xerial = len(compressed) >= xerialHeaderSize && bytes.HasPrefix(compressed, xerialMagic)
	if r.xerial {
		r.src = compressed[xerialHeaderSize:]
	}
}

func (r *snappyReader) release() {
	r.src, r.rest = nil, nil
	if cap(r.out) > pooledBufferMax {
		r.out = nil
	}
}

func (r *snappyReader) Read(p []byte) (int, error) {
	for len(r.rest) == 0 {
		if len(r.src) == 0 {
			return 0, io.EOF
		}
		block := r.src
		if r.xerial {
			if len(r.src) < 4 {
				return 0, fmt.Errorf("snappy: truncated xerial block length")
			}
			n := binary.BigEndian.Uint32(r.src)
			if uint64(n) > uint64(len(r.src)-4) {
				return 0, fmt.Errorf("snappy: xerial block of %d bytes, %d left", n, len(r.src)-4)
			}
			block, r.src = r.src[4:4+n], r.src[4+n:]
		} else {
			r.src = nil
		}
		size, err := snappy.DecodedLen(block)
		if err != nil {
			return 0, fmt.Errorf("snappy: %w", err)
		}
		if r.produced+int64(size) > r.limit {
			return 0, fmt.Errorf("%w: a snappy block decodes to %d bytes, past the %d-byte limit", ErrTooLarge, size, r.limit)
		}
		if cap(r.out) < size {
			r.out = make([]byte, size)
		}
		// Strict: s2.Decode also accepts S2-only encodings (repeat offsets), which
		// Java and librdkafka consumers cannot decode; such a batch is refused.
		out, err := snappy.DecodeStrict(r.out[:size], block)
		if err != nil {
			return 0, fmt.Errorf("snappy: %w", err)
		}
		r.rest = out
		r.produced += int64(len(out))
	}
	n := copy(p, r.rest)
	r.rest = r.rest[n:]
	return n, nil
}

// xerialMagicHeader is the xerial framing's header: the magic, version 1 and minimum
// compatible version 1.
var xerialMagicHeader = append(append([]byte{}, xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1)

// xerialWriter writes snappy in the xerial framing (Java's SnappyOutputStream, which
// every Kafka client reads): the header, then each xerialBlockSize bytes of input as a
// big-endian int32 length and a standard snappy block (s2.EncodeSnappy, which the
// strict decoder of codecs.go and every snappy implementation read).
type xerialWriter struct {
	dst     io.Writer
	in      []byte // input not yet encoded, up to xerialBlockSize
	block   []byte // the length and encoded block, reused
	started bool   // the header is written
}

func (x *xerialWriter) Reset(dst io.Writer) { x.dst, x.in, x.started = dst, x.in[:0], false }

func (x *xerialWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if x.in == nil {
			x.in = make([]byte, 0, xerialBlockSize)
		}
		k := copy(x.in[len(x.in):cap(x.in)], p)
		x.in, p = x.in[:len(x.in)+k], p[k:]
		if len(x.in) == cap(x.in) {
			if err := x.flush(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

// flush writes the header when not yet written and the buffered input as one block.
func (x *xerialWriter) flush() error {
	if !x.started {
		if _, err := x.dst.Write(xerialMagicHeader); err != nil {
			return err
		}
		x.started = true
	}
	if len(x.in) == 0 {
		return nil
	}
	need := 4 + s2.MaxEncodedLen(len(x.in))
	if cap(x.block) < need {
		x.block = make([]byte, need)
	}
	enc := s2.EncodeSnappy(x.block[4:need], x.in)
	binary.BigEndian.PutUint32(x.block, uint32(len(enc)))
	x.in = x.in[:0]
	_, err := x.dst.Write(x.block[:4+len(enc)])
	return err
}

// Close writes what is buffered. Nothing written at all is raw snappy's empty block:
// a header with no blocks is read as raw snappy, and refused, by some consumers (kgo).
func (x *xerialWriter) Close() error {
	if !x.started && len(x.in) == 0 {
		_, err := x.dst.Write([]byte{0})
		return err
	}
	return x.flush()
}
