package compress

import (
	"bytes"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Options are a codec's levels, as Kafka's compression.gzip.level and
// compression.zstd.level (KIP-390) name them.
type Options struct {
	GzipLevel int // -1 (the library's default) or 1-9
	ZstdLevel int // zstd's levels (1-22; 3 is zstd's default)
}

// DefaultOptions are Kafka's defaults: gzip's default level, zstd level 3.
var DefaultOptions = Options{GzipLevel: gzip.DefaultCompression, ZstdLevel: 3}

// zstdWindow is the window of the zstd writer: a batch is at most max.message.bytes
// (1 MiB by default), and the window bounds the encoder's memory.
const zstdWindow = 1 << 20

// Writer is a pooled compressing writer.
type Writer interface {
	io.Writer
	Reset(io.Writer)
	Close() error
}

// Writers hands out pooled compressing writers in Kafka's framings: gzip, snappy in
// the xerial framing, LZ4 frames of 64 KiB blocks (KafkaLZ4BlockOutputStream) and
// zstd with a 1 MiB window, all synchronous. Safe for concurrent use; the zero value is
// ready.
type Writers struct {
	gzip   [11]sync.Pool // *gzip.Writer by level+1 (-1 at 0)
	zstd   [5]sync.Pool  // *zstd.Encoder by EncoderLevel (1-4)
	lz4    sync.Pool     // *lz4.Writer
	snappy sync.Pool     // *xerialWriter
}

// Get returns a pooled writer of codec with opts, writing to dst, and the function that
// returns it to the pool. Levels out of range are the codec's default.
func (w *Writers) Get(codec int8, opts Options, dst io.Writer) (Writer, func(), error) {
	var pool *sync.Pool
	var newWriter func() (Writer, error)
	switch codec {
	case Gzip:
		level := opts.GzipLevel
		if level != gzip.DefaultCompression && (level < gzip.BestSpeed || level > gzip.BestCompression) {
			level = gzip.DefaultCompression
		}
		pool = &w.gzip[level+1]
		newWriter = func() (Writer, error) { return gzip.NewWriterLevel(nil, level) }
	case Snappy:
		pool = &w.snappy
		newWriter = func() (Writer, error) { return &xerialWriter{}, nil }
	case LZ4:
		pool = &w.lz4
		newWriter = func() (Writer, error) {
			lw := lz4.NewWriter(nil)
			return lw, lw.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ConcurrencyOption(1))
		}
	case Zstd:
		level := zstd.EncoderLevelFromZstd(opts.ZstdLevel)
		if level < zstd.SpeedFastest || level > zstd.SpeedBestCompression {
			level = zstd.SpeedDefault
		}
		pool = &w.zstd[level]
		newWriter = func() (Writer, error) {
			return zstd.NewWriter(nil, zstd.WithEncoderLevel(level), zstd.WithWindowSize(zstdWindow),
				zstd.WithEncoderConcurrency(1)) // synchronous: no goroutines behind the stream
		}
	default:
		return nil, nil, fmt.Errorf("no writer for codec %d", codec)
	}
	cw, _ := pool.Get().(Writer)
	if cw == nil {
		var err error
		if cw, err = newWriter(); err != nil {
			return nil, nil, err
		}
	}
	cw.Reset(dst)
	return cw, func() { pool.Put(cw) }, nil
}

// Compress returns raw compressed whole with codec and opts.
func (w *Writers) Compress(codec int8, opts Options, raw []byte) ([]byte, error) {
	var out bytes.Buffer
	cw, put, err := w.Get(codec, opts, &out)
	if err != nil {
		return nil, err
	}
	defer put()
	if _, err := cw.Write(raw); err != nil {
		return nil, err
	}
	if err := cw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
