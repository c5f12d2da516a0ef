package broker

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rvCodecs are the codecs of a v2 batch by attribute value, with kgo's compressor.
var rvCodecs = []struct {
	name  string
	codec int8
	kgo   kgo.CompressionCodec
}{
	{"none", 0, kgo.NoCompression()}, {"gzip", 1, kgo.GzipCompression()}, {"snappy", 2, kgo.SnappyCompression()},
	{"lz4", 3, kgo.Lz4Compression()}, {"zstd", 4, kgo.ZstdCompression()},
}

// rvCompress compresses raw with kgo's default compressor for codec.
func rvCompress(tb testing.TB, raw []byte, codec int8) []byte {
	tb.Helper()
	if codec == 0 {
		return raw
	}
	c, err := kgo.DefaultCompressor(rvCodecs[codec].kgo)
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	out, used := c.Compress(&buf, raw)
	if int8(used) != codec {
		tb.Fatalf("compressor used codec %d, want %d", used, codec)
	}
	return bytes.Clone(out)
}

// rvBatch builds a producer batch (baseOffset 0, valid CRC) around a records section
// already in codec's form, claiming count records.
func rvBatch(section []byte, count int32, codec int8) []byte {
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, Attributes: int16(codec), LastOffsetDelta: count - 1,
		FirstTimestamp: 1_700_000_000_000, MaxTimestamp: 1_700_000_000_000,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: count, Records: section,
	}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// rvRecord encodes one record: offset delta, value, and optionally a record length
// other than the true one.
func rvRecord(offsetDelta int64, value []byte, length int64) []byte {
	body := []byte{0}
	body = binary.AppendVarint(body, 0) // timestamp delta
	body = binary.AppendVarint(body, offsetDelta)
	body = binary.AppendVarint(body, -1) // null key
	body = binary.AppendVarint(body, int64(len(value)))
	body = append(body, value...)
	body = binary.AppendVarint(body, 0) // headers
	if length < 0 {
		length = int64(len(body))
	}
	return append(binary.AppendVarint(nil, length), body...)
}

// rvGoodSection is n records with values of size bytes (see rvValue), kmsg-encoded.
func rvGoodSection(n, size int, compressible bool, seed int) []byte {
	var out []byte
	for i := 0; i < n; i++ {
		r := kmsg.Record{OffsetDelta: int32(i), Key: fmt.Appendf(nil, "key-%d", i), Value: rvValue(size, compressible, seed*n+i),
			Headers: []kmsg.Header{{Key: "h", Value: []byte("v")}}}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		out = r.AppendTo(out)
	}
	return out
}

// rvValue is size bytes: pseudo-random when incompressible, repetitive JSON-ish text
// otherwise.
func rvValue(size int, compressible bool, seed int) []byte {
	value := make([]byte, size)
	if compressible {
		copy(value, bytes.Repeat(fmt.Appendf(nil, `{"id":%d,"status":"shipped","city":"Berlin"},`, seed), size/40+1))
		return value
	}
	state := uint64(seed)*0x9e3779b97f4a7c15 + 1
	for j := range value {
		state ^= state << 13
		state ^= state >> 7
		state ^= state << 17
		value[j] = byte(state)
	}
	return value
}

// rvBomb is a records section of count records whose values are each size zero bytes:
// valid records that decompress far past what their compressed size suggests.
func rvBomb(count, size int) []byte {
	var out []byte
	zeros := make([]byte, size)
	for i := 0; i < count; i++ {
		out = append(out, rvRecord(int64(i), zeros, -1)...)
	}
	return out
}

// TestRecordValidationCodes sends each record-field inconsistency in every codec
// through Produce and checks Kafka's error code and a message naming the record.
func TestRecordValidationCodes(t *testing.T) {
	b := startTestBroker(t, "", map[string]string{decompressedLimitProperty: "1048576"})
	adm := newAdmin(t, b)
	mustCreateTopic(t, adm, "v", 1, nil)
	cl := newClient(t, b)
	good := rvGoodSection(3, 100, true, 1)
	cases := []struct {
		name    string
		section []byte
		count   int32
		code    map[int8]int16 // by codec; codec -1 is every codec
		msg     string
	}{
		{"valid", good, 3, map[int8]int16{-1: 0}, ""},
		{"poison: one record claiming 1 GiB", rvRecord(0, nil, 1<<30), 1,
			map[int8]int16{0: kerr.InvalidRecord.Code, -1: kerr.MessageTooLarge.Code}, "record 0 claims 1073741824 bytes"},
		{"offset deltas 0, 2", append(rvRecord(0, []byte("a"), -1), rvRecord(2, []byte("b"), -1)...), 2,
			map[int8]int16{-1: kerr.InvalidRecord.Code}, "record 1 has offset delta 2, want 1"},
		{"record count above the records", good, 4, map[int8]int16{-1: kerr.InvalidRecord.Code}, "record 3 is cut short"},
		{"record count below the records", good, 2, map[int8]int16{-1: kerr.InvalidRecord.Code}, "bytes follow record 1"},
		{"length longer than the fields", rvRecord(0, []byte("abc"), 20), 1, map[int8]int16{-1: kerr.InvalidRecord.Code}, "record 0"},
		{"zeros, not records", make([]byte, 4096), 1, map[int8]int16{-1: kerr.InvalidRecord.Code}, "record 0"},
		{"bomb: 64 records of 64 KiB zeros", rvBomb(64, 64<<10), 64, map[int8]int16{0: -2, -1: kerr.MessageTooLarge.Code}, "1048576-byte"},
	}
	for _, c := range cases {
		for _, codec := range rvCodecs {
			want, ok := c.code[codec.codec]
			if !ok {
				want = c.code[-1]
			}
			if want == -2 {
				continue // too large to send uncompressed
			}
			t.Run(c.name+"/"+codec.name, func(t *testing.T) {
				batch := rvBatch(rvCompress(t, c.section, codec.codec), c.count, codec.codec)
				code, msg := produceRaw(t, cl, "v", batch)
				if code != want {
					t.Fatalf("error code %d (%s), want %d", code, msg, want)
				}
				if want != 0 && !strings.Contains(msg, c.msg) {
					t.Fatalf("message %q does not say %q", msg, c.msg)
				}
			})
		}
	}
	t.Run("undecodable", func(t *testing.T) {
		for _, codec := range rvCodecs[1:] {
			compressed := rvCompress(t, good, codec.codec)
			for name, data := range map[string][]byte{
				"garbage":   bytes.Repeat([]byte{0xa5, 0x17, 0x3c}, 40),
				"truncated": compressed[:len(compressed)*2/3],
				"bit flip":  flipByte(compressed, len(compressed)/2),
			} {
				code, msg := produceRaw(t, cl, "v", rvBatch(data, 3, codec.codec))
				if code != kerr.CorruptMessage.Code && code != kerr.InvalidRecord.Code {
					t.Errorf("%s %s: error code %d (%s), want CORRUPT_MESSAGE or INVALID_RECORD", codec.name, name, code, msg)
				}
				if name == "garbage" && code != kerr.CorruptMessage.Code {
					t.Errorf("%s garbage: error code %d (%s), want CORRUPT_MESSAGE", codec.name, code, msg)
				}
			}
		}
	})
}

// A batch labelled snappy must hold standard Snappy: an S2 block (S2's repeat-offset
// extension) decodes with s2 but not in Java or librdkafka consumers, so it is refused
// as CORRUPT_MESSAGE rather than stored. Raw and xerial-framed alike.
func TestSnappyBatchWithS2OnlyBlockIsRefused(t *testing.T) {
	section := rvGoodSection(20, 200, true, 7)
	block := s2.Encode(nil, section)
	if _, err := snappy.DecodeStrict(nil, block); err == nil {
		t.Fatal("the s2 block is valid snappy: the test needs S2-only encodings")
	}
	if out, err := s2.Decode(nil, block); err != nil || !bytes.Equal(out, section) {
		t.Fatalf("s2 round trip: %v", err)
	}
	xerial := []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1} // the xerial framing's header
	xerial = binary.BigEndian.AppendUint32(xerial, uint32(len(block)))
	xerial = append(xerial, block...)

	b := startTestBroker(t, "", nil)
	mustCreateTopic(t, newAdmin(t, b), "s", 1, nil)
	cl := newClient(t, b)
	for name, data := range map[string][]byte{"raw": block, "xerial": xerial} {
		if code, msg := produceRaw(t, cl, "s", rvBatch(data, 20, 2)); code != kerr.CorruptMessage.Code {
			t.Errorf("%s: error code %d (%s), want CORRUPT_MESSAGE", name, code, msg)
		}
	}
	// Standard snappy still passes.
	if code, msg := produceRaw(t, cl, "s", rvBatch(rvCompress(t, section, 2), 20, 2)); code != 0 {
		t.Fatalf("snappy: error code %d (%s)", code, msg)
	}
}

func flipByte(b []byte, i int) []byte {
	out := bytes.Clone(b)
	out[i] ^= 0xff
	return out
}

// produceRaw sends one batch to partition 0 of topic with acks=1 and returns the
// partition's error code and message.
func produceRaw(t *testing.T, cl *kgo.Client, topic string, batch []byte) (int16, string) {
	t.Helper()
	p := produceRawPartition(t, cl, topic, batch)
	msg := ""
	if p.ErrorMessage != nil {
		msg = *p.ErrorMessage
	}
	return p.ErrorCode, msg
}

// TestPoisonBatchConsumerReadsToEnd: after refused poison batches (the 1 GiB record
// claim, a bomb) a consumer reads the partition from its start to its end.
func TestPoisonBatchConsumerReadsToEnd(t *testing.T) {
	b := startTestBroker(t, "", nil)
	adm := newAdmin(t, b)
	mustCreateTopic(t, adm, "poison", 1, nil)
	cl := newClient(t, b)
	if code, msg := produceRaw(t, cl, "poison", rvBatch(rvRecord(0, nil, 1<<30), 1, 0)); code != kerr.InvalidRecord.Code {
		t.Fatalf("poison batch: code %d (%s)", code, msg)
	}
	if code, msg := produceRaw(t, cl, "poison", rvBatch(rvCompress(t, rvBomb(100, 1<<20), 4), 100, 4)); code != kerr.MessageTooLarge.Code {
		t.Fatalf("zstd bomb: code %d (%s)", code, msg)
	}
	prod := newClient(t, b, kgo.DefaultProduceTopic("poison"))
	for i := 0; i < 10; i++ {
		if err := prod.ProduceSync(testContext(t), kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cons := newClient(t, b, kgo.ConsumeTopics("poison"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for next := int64(0); next < 10; {
		fs := cons.PollFetches(testContext(t))
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next || string(r.Value) != fmt.Sprint(next) {
				t.Fatalf("record at offset %d is %q, want offset %d", r.Offset, r.Value, next)
			}
			next++
		})
	}
}
