package broker

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/petrel-broker/petrel/segment"
	"github.com/pierrec/lz4/v4"
)

// Streaming decompression of a batch's records section for record validation. Every
// codec reads from the compressed bytes in place and hands out its output a buffer at a
// time; readers and buffers come from pools. Snappy is the exception that the format
// forces: a snappy block can refer back anywhere in its output, so each block (32 KiB
// in the xerial framing Java and kgo write, the whole section in raw snappy) is decoded
// whole, after its declared size is checked against the limit.

// zstdMaxWindow bounds the window a zstd frame may ask for: 8 MiB, the window of zstd's
// level 19 (producers use level 3 and smaller windows). Larger frames are undecodable.
const zstdMaxWindow = 8 << 20

// pooledBufferMax is the largest snappy block buffer returned to its pool.
const pooledBufferMax = 1 << 20

// xerialMagic starts snappy in the xerial framing (Java's SnappyOutputStream): the
// magic, an int32 version and an int32 minimum compatible version, then blocks, each an
// int32 compressed length and a raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderSize = 16

// codecReaders hands out decompressing readers over compressed bytes.
type codecReaders struct {
	limit  int64 // largest output a reader is allowed to produce
	gzip   sync.Pool
	zstd   sync.Pool
	lz4    sync.Pool
	snappy sync.Pool
}

func newCodecReaders(limit int64) *codecReaders {
	c := &codecReaders{limit: limit}
	c.gzip.New = func() any { return new(gzip.Reader) }
	c.zstd.New = func() any {
		d, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1), // synchronous: no goroutines behind the stream
			zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(zstdMaxWindow),
			zstd.WithDecoderMaxMemory(uint64(max(limit, 1))))
		if err != nil {
			panic(err) // only for invalid options, which are constants here
		}
		return d
	}
	c.lz4.New = func() any { return lz4.NewReader(nil) }
	c.snappy.New = func() any { return new(snappyReader) }
	return c
}

// open returns a reader of compressed decompressed with codec (1 gzip, 2 snappy, 3 lz4,
// 4 zstd) and a release function to call when done with it. An error means the data
// cannot even start to decode.
func (c *codecReaders) open(codec int8, compressed []byte) (io.Reader, func(), error) {
	src := bytes.NewReader(compressed)
	switch codec {
	case 1:
		r := c.gzip.Get().(*gzip.Reader)
		if err := r.Reset(src); err != nil {
			c.gzip.Put(r)
			return nil, nil, err
		}
		return r, func() { c.gzip.Put(r) }, nil
	case 2:
		r := c.snappy.Get().(*snappyReader)
		r.reset(compressed, c.limit)
		return r, func() { r.release(); c.snappy.Put(r) }, nil
	case 3:
		r := c.lz4.Get().(*lz4.Reader)
		r.Reset(src)
		return r, func() { r.Reset(nil); c.lz4.Put(r) }, nil
	case 4:
		d := c.zstd.Get().(*zstd.Decoder)
		if err := d.Reset(src); err != nil {
			c.zstd.Put(d)
			return nil, nil, zstdError(err)
		}
		return zstdStream{d}, func() { _ = d.Reset(nil); c.zstd.Put(d) }, nil
	}
	return nil, nil, fmt.Errorf("unknown compression codec %d", codec)
}

// zstdStream reports a frame that needs more memory or a larger window than allowed as
// too large rather than undecodable.
type zstdStream struct{ d *zstd.Decoder }

func (z zstdStream) Read(p []byte) (int, error) {
	n, err := z.d.Read(p)
	return n, zstdError(err)
}

func zstdError(err error) error {
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
		return fmt.Errorf("%w: %v", segment.ErrRecordsTooLarge, err)
	}
	return err
}

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
			return 0, fmt.Errorf("%w: a snappy block decodes to %d bytes, past the %d-byte limit", segment.ErrRecordsTooLarge, size, r.limit)
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
