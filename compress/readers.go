package compress

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Streaming decompression: every codec reads from the compressed bytes in place and
// hands out its output a buffer at a time; readers and buffers come from pools. Snappy
// is the exception that the format forces: a snappy block can refer back anywhere in its
// output, so each block (32 KiB in the xerial framing Java and kgo write, the whole
// section in raw snappy) is decoded whole, after its declared size is checked against
// the limit.

// zstdMaxWindow bounds the window a zstd frame may ask for: 8 MiB, the window of zstd's
// level 19 (producers use level 3 and smaller windows). Larger frames are ErrTooLarge.
const zstdMaxWindow = 8 << 20

// pooledBufferMax is the largest snappy block buffer returned to its pool.
const pooledBufferMax = 1 << 20

// Readers hands out decompressing readers over compressed bytes, none of which
// produces more than its limit. Safe for concurrent use.
type Readers struct {
	limit  int64 // largest output a reader is allowed to produce
	gzip   sync.Pool
	zstd   sync.Pool
	lz4    sync.Pool
	snappy sync.Pool
}

// NewReaders returns Readers whose streams stop with ErrTooLarge past limit bytes.
func NewReaders(limit int64) *Readers {
	c := &Readers{limit: limit}
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

// Limit is the most a reader of c produces.
func (c *Readers) Limit() int64 { return c.limit }

// Open returns a reader of compressed decompressed with codec and a release function to
// call when done with it. An error means the data cannot even start to decode. The
// reader does not enforce the limit for gzip and lz4 by itself: a caller that reads
// to the end bounds what it reads (Decompress does; the record check counts records).
func (c *Readers) Open(codec int8, compressed []byte) (io.Reader, func(), error) {
	src := bytes.NewReader(compressed)
	switch codec {
	case Gzip:
		r := c.gzip.Get().(*gzip.Reader)
		if err := r.Reset(src); err != nil {
			c.gzip.Put(r)
			return nil, nil, err
		}
		return r, func() { c.gzip.Put(r) }, nil
	case Snappy:
		r := c.snappy.Get().(*snappyReader)
		r.reset(compressed, c.limit)
		return r, func() { r.release(); c.snappy.Put(r) }, nil
	case LZ4:
		r := c.lz4.Get().(*lz4.Reader)
		r.Reset(src)
		return r, func() { r.Reset(nil); c.lz4.Put(r) }, nil
	case Zstd:
		d := c.zstd.Get().(*zstd.Decoder)
		if err := d.Reset(src); err != nil {
			c.zstd.Put(d)
			return nil, nil, zstdError(err)
		}
		return zstdStream{d}, func() { _ = d.Reset(nil); c.zstd.Put(d) }, nil
	}
	return nil, nil, fmt.Errorf("unknown compression codec %d", codec)
}

// Decompress returns compressed decompressed with codec whole, or ErrTooLarge when it
// is longer than the limit.
func (c *Readers) Decompress(codec int8, compressed []byte) ([]byte, error) {
	r, release, err := c.Open(codec, compressed)
	if err != nil {
		return nil, err
	}
	defer release()
	var out bytes.Buffer
	n, err := io.Copy(&out, io.LimitReader(r, c.limit+1))
	if err != nil {
		return nil, err
	}
	if n > c.limit {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, c.limit)
	}
	return out.Bytes(), nil
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
		return fmt.Errorf("%w: %v", ErrTooLarge, err)
	}
	return err
}
