package segment

// Recompression to a topic's compression.type, as Kafka's LogValidator does when the
// topic names a codec other than the batch's (producer keeps every batch as sent). The
// records section is rewritten as one stream: a compressed batch is decompressed by the
// record walk's own streaming reader (validate.go, bounded by
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
	"sync"

	"github.com/petrel-broker/petrel/compress"
)

// KeepCodec is Compression.Codec for compression.type=producer.
const KeepCodec = -1

// Compression is a topic's compression.type with its codec levels.
type Compression struct {
	Codec int8             // the codec batches are stored with (0-4), or KeepCodec
	Opts  compress.Options // compression.gzip.level and compression.zstd.level
}

// CompressionCodecs are compression.type's values as batch codecs.
var CompressionCodecs = map[string]int8{"producer": KeepCodec, "uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

// Rewrites reports whether a batch compressed with codec is stored with another codec.
func (c Compression) Rewrites(codec int8) bool { return c.Codec != KeepCodec && c.Codec != codec }

// recompressedSizeBound is the largest output buffer kept in the pool; a larger one
// (a topic with a large max.message.bytes) is left to the garbage collector.
const recompressedSizeBound = 4 << 20

// batchRecompressor rewrites batches with a topic's codec; safe for concurrent use.
type batchRecompressor struct {
	writers compress.Writers
	out     sync.Pool // *boundedBuffer
}

// Recompress checks the records of batch, which ValidateBatch accepted, as Check does,
// and returns the batch rewritten with tc's codec, at most maxBytes long, and release,
// to call once the returned batch is no longer used (after the append). Its errors are
// Check's, and ErrRecordsTooLarge (MESSAGE_TOO_LARGE) for a rewritten batch larger than
// maxBytes.
func (v *RecordValidator) Recompress(batch []byte, compacted bool, tc Compression, maxBytes int) ([]byte, func(), error) {
	h, err := ParseBatchHeader(batch)
	if err != nil {
		return nil, nil, err
	}
	out, _ := v.rewrite.out.Get().(*boundedBuffer)
	if out == nil {
		out = new(boundedBuffer)
	}
	out.reset(maxBytes, compress.Name(tc.Codec))
	release := func() {
		if cap(out.b) <= recompressedSizeBound {
			out.b = out.b[:0]
			v.rewrite.out.Put(out)
		}
	}
	out.b = append(out.b, batch[:BatchHeaderSize]...)
	var dst io.Writer = out
	var w compress.Writer
	if tc.Codec != compress.None {
		var put func()
		if w, put, err = v.rewrite.writers.Get(tc.Codec, tc.Opts, out); err != nil {
			release()
			return nil, nil, err
		}
		defer put()
		dst = w
	}
	if h.Codec() == 0 {
		var sum RecordsSummary
		sum, err = CheckRecords(batch, nil, v.limit, nil)
		if err = recordsError(sum, err, compacted); err == nil {
			_, err = dst.Write(batch[BatchHeaderSize:])
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
	// The header's layout is doc.go's: batchLength at 8 (the bytes after it),
	// the CRC at 17 over everything from the attributes at 21, whose low 3 bits are the
	// codec.
	b := out.b
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint16(b[21:], uint16(h.Attributes)&^0x07|uint16(tc.Codec))
	binary.BigEndian.PutUint32(b[17:], CRC32C(b[21:]))
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
		return 0, fmt.Errorf("%w: the batch recompressed to %s is larger than max.message.bytes (%d)", ErrRecordsTooLarge, o.codec, o.max)
	}
	o.b = append(o.b, p...)
	return len(p), nil
}
