package broker

// Recompression to a topic's compression.type, as Kafka's LogValidator does when the
// topic names a codec other than the batch's (producer keeps every batch as sent). The
// records section is rewritten as one stream: a compressed batch is decompressed by the
// record walk's own streaming reader (recordcheck.go, bounded by
// petrel.max.decompressed.batch.bytes) and every byte the walk reads is passed on to
// the target codec's writer, which writes into a buffer that refuses to grow past the
// topic's max.message.bytes (MESSAGE_TOO_LARGE, as Kafka's check of a batch's size after
// recompression). Nothing is held whole but the output; the writers and output buffers
// are pooled. The records themselves (offset and timestamp deltas, keys, values,
// headers) and every header field but the codec bits, batchLength and the CRC stay as
// they were.

import (
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/petrel-broker/petrel/segment"
	"github.com/pierrec/lz4/v4"
)

// keepCodec is topicCompression.codec for compression.type=producer.
const keepCodec = -1

// zstdCodec is zstd's codec number: a topic stored with it refuses consumers' fetches
// below v10 (01_fetch.go).
const zstdCodec = 4

// topicCompression is a topic's compression.type with its codec levels.
type topicCompression struct {
	codec     int8              // the codec batches are stored with (0-4), or keepCodec
	gzipLevel int               // compression.gzip.level: -1 (the library's default) or 1-9
	zstdLevel zstd.EncoderLevel // compression.zstd.level as klauspost's encoder speed
}

// codecNumbers are compression.type's values as batch codecs.
var codecNumbers = map[string]int8{"producer": keepCodec, "uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

// codecNames are the codecs' names in errors.
var codecNames = [...]string{"uncompressed", "gzip", "snappy", "lz4", "zstd"}

// compressionConfig resolves a topic's compression settings.
func compressionConfig(cfgs map[string]resolvedConfig) topicCompression {
	codec, ok := codecNumbers[cfgs["compression.type"].value]
	if !ok {
		codec = keepCodec
	}
	gzipLevel, err := strconv.Atoi(cfgs["compression.gzip.level"].value)
	if err != nil {
		gzipLevel = gzip.DefaultCompression
	}
	zstdLevel, err := strconv.Atoi(cfgs["compression.zstd.level"].value)
	if err != nil {
		zstdLevel = 3
	}
	return topicCompression{codec: codec, gzipLevel: gzipLevel, zstdLevel: zstd.EncoderLevelFromZstd(zstdLevel)}
}

// rewrites reports whether a batch compressed with codec is stored with another codec.
func (c topicCompression) rewrites(codec int8) bool { return c.codec != keepCodec && c.codec != codec }

// recompressedSizeBound is the largest output buffer kept in the pool; a larger one
// (a topic with a large max.message.bytes) is left to the garbage collector.
const recompressedSizeBound = 4 << 20

// xerialBlockSize is the input of one snappy block in the xerial framing, as Java's
// SnappyOutputStream writes it.
const xerialBlockSize = 32 << 10

// zstdWindow is the window of the zstd writer: a batch is at most max.message.bytes
// (1 MiB by default), and the window bounds the encoder's memory.
const zstdWindow = 1 << 20

// codecWriter is a pooled compressing writer.
type codecWriter interface {
	io.Writer
	Reset(io.Writer)
	Close() error
}

// batchRecompressor rewrites batches with a topic's codec; safe for concurrent use.
type batchRecompressor struct {
	gzip   [11]sync.Pool // *gzip.Writer by level+1 (-1 at 0)
	zstd   [5]sync.Pool  // *zstd.Encoder by EncoderLevel (1-4)
	lz4    sync.Pool     // *lz4.Writer
	snappy sync.Pool     // *xerialWriter
	out    sync.Pool     // *boundedBuffer
}

// writer returns a pooled writer for tc's codec, writing to dst, and the function that
// returns it to the pool.
func (r *batchRecompressor) writer(tc topicCompression, dst io.Writer) (codecWriter, func(), error) {
	var pool *sync.Pool
	var newWriter func() (codecWriter, error)
	switch tc.codec {
	case 1:
		level := tc.gzipLevel
		if level != gzip.DefaultCompression && (level < gzip.BestSpeed || level > gzip.BestCompression) {
			level = gzip.DefaultCompression
		}
		pool = &r.gzip[level+1]
		newWriter = func() (codecWriter, error) { return gzip.NewWriterLevel(nil, level) }
	case 2:
		pool = &r.snappy
		newWriter = func() (codecWriter, error) { return &xerialWriter{}, nil }
	case 3:
		pool = &r.lz4
		newWriter = func() (codecWriter, error) {
			w := lz4.NewWriter(nil)
			// Kafka's own LZ4 frames: 64 KiB blocks (KafkaLZ4BlockOutputStream), written
			// synchronously.
			return w, w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ConcurrencyOption(1))
		}
	case 4:
		level := tc.zstdLevel
		if level < zstd.SpeedFastest || level > zstd.SpeedBestCompression {
			level = zstd.SpeedDefault
		}
		pool = &r.zstd[level]
		newWriter = func() (codecWriter, error) {
			return zstd.NewWriter(nil, zstd.WithEncoderLevel(level), zstd.WithWindowSize(zstdWindow),
				zstd.WithEncoderConcurrency(1)) // synchronous: no goroutines behind the stream
		}
	default:
		return nil, nil, fmt.Errorf("no writer for codec %d", tc.codec)
	}
	w, _ := pool.Get().(codecWriter)
	if w == nil {
		var err error
		if w, err = newWriter(); err != nil {
			return nil, nil, err
		}
	}
	w.Reset(dst)
	return w, func() { pool.Put(w) }, nil
}

// recompress checks the records of batch, which validateProducedBatch accepted, as
// recordValidator.check does, and returns the batch rewritten with tc's codec, at most
// maxBytes long, and release, to call once the returned batch is no longer used (after
// the append). Its errors are check's, and segment.ErrRecordsTooLarge
// (MESSAGE_TOO_LARGE) for a rewritten batch larger than maxBytes.
func (v *recordValidator) recompress(batch []byte, compacted bool, tc topicCompression, maxBytes int) ([]byte, func(), error) {
	h, err := segment.ParseBatchHeader(batch)
	if err != nil {
		return nil, nil, err
	}
	out, _ := v.rewrite.out.Get().(*boundedBuffer)
	if out == nil {
		out = new(boundedBuffer)
	}
	out.reset(maxBytes, codecNames[tc.codec])
	release := func() {
		if cap(out.b) <= recompressedSizeBound {
			out.b = out.b[:0]
			v.rewrite.out.Put(out)
		}
	}
	out.b = append(out.b, batch[:segment.BatchHeaderSize]...)
	var dst io.Writer = out
	var w codecWriter
	if tc.codec != 0 {
		var put func()
		if w, put, err = v.rewrite.writer(tc, out); err != nil {
			release()
			return nil, nil, err
		}
		defer put()
		dst = w
	}
	if h.Codec() == 0 {
		var sum segment.RecordsSummary
		sum, err = segment.CheckRecords(batch, nil, v.limit, nil)
		if err = recordsError(sum, err, compacted); err == nil {
			_, err = dst.Write(batch[segment.BatchHeaderSize:])
		}
	} else {
		err = v.walk(batch, h.Codec(), compacted, dst)
	}
	if err == nil && w != nil {
		err = w.Close()
	}
	if err != nil {
		release()
		return nil, nil, err
	}
	// The header's layout is segment/doc.go's: batchLength at 8 (the bytes after it),
	// the CRC at 17 over everything from the attributes at 21, whose low 3 bits are the
	// codec.
	b := out.b
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint16(b[21:], uint16(h.Attributes)&^0x07|uint16(tc.codec))
	binary.BigEndian.PutUint32(b[17:], segment.CRC32C(b[21:]))
	return b, release, nil
}

// boundedBuffer collects a rewritten batch, refusing to grow past max bytes.
type boundedBuffer struct {
	b     []byte
	max   int
	codec string // the target codec, for the error
}

func (o *boundedBuffer) reset(max int, codec string) { o.b, o.max, o.codec = o.b[:0], max, codec }

func (o *boundedBuffer) Write(p []byte) (int, error) {
	if len(o.b)+len(p) > o.max {
		return 0, fmt.Errorf("%w: the batch recompressed to %s is larger than max.message.bytes (%d)", segment.ErrRecordsTooLarge, o.codec, o.max)
	}
	o.b = append(o.b, p...)
	return len(p), nil
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

func (x *xerialWriter) Close() error { return x.flush() }
