package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// rcRecord is one record of a hand-made records section; the *Len fields, when set,
// replace the lengths and counts the encoder would write, and raw bytes go where a
// field would be.
type rcRecord struct {
	length      *int64 // replaces the record's length
	tsDelta     int64
	offsetDelta int64
	key, value  []byte // nil is null
	keyLen      *int64 // replaces the key length
	valueLen    *int64
	headerCount *int64
	headers     []rcHeader
	pad         []byte // extra bytes inside the record, after the headers
	overlongOff bool   // encode the offset delta in 6 bytes
}

type rcHeader struct {
	key, value []byte
	keyLen     *int64
	valueLen   *int64
}

func p64(v int64) *int64 { return &v }

func appendLen(b []byte, data []byte, override *int64) []byte {
	switch {
	case override != nil:
		b = binary.AppendVarint(b, *override)
	case data == nil:
		b = binary.AppendVarint(b, -1)
	default:
		b = binary.AppendVarint(b, int64(len(data)))
	}
	return append(b, data...)
}

func (r rcRecord) encode() []byte {
	body := []byte{0} // attributes
	body = binary.AppendVarint(body, r.tsDelta)
	if r.overlongOff {
		// zigzag(offsetDelta) padded to six bytes with continuation bits.
		z := uint64(r.offsetDelta<<1) ^ uint64(r.offsetDelta>>63)
		for i := 0; i < 5; i++ {
			body = append(body, byte(z&0x7f)|0x80)
			z >>= 7
		}
		body = append(body, byte(z))
	} else {
		body = binary.AppendVarint(body, r.offsetDelta)
	}
	body = appendLen(body, r.key, r.keyLen)
	body = appendLen(body, r.value, r.valueLen)
	if r.headerCount != nil {
		body = binary.AppendVarint(body, *r.headerCount)
	} else {
		body = binary.AppendVarint(body, int64(len(r.headers)))
	}
	for _, h := range r.headers {
		body = appendLen(body, h.key, h.keyLen)
		body = appendLen(body, h.value, h.valueLen)
	}
	body = append(body, r.pad...)
	length := int64(len(body))
	if r.length != nil {
		length = *r.length
	}
	return append(binary.AppendVarint(nil, length), body...)
}

// rcBatch wraps a records section in a v2 batch header with count records.
func rcBatch(records []byte, count int32, codec int8) []byte {
	b := make([]byte, BatchHeaderSize, BatchHeaderSize+len(records))
	binary.BigEndian.PutUint32(b[offsetBatchLength:], uint32(BatchHeaderSize-batchLengthOverhead+len(records)))
	binary.BigEndian.PutUint32(b[offsetPartitionLeaderEpoch:], 0xffffffff)
	b[offsetMagic] = MagicV2
	binary.BigEndian.PutUint16(b[offsetAttributes:], uint16(codec))
	binary.BigEndian.PutUint32(b[offsetLastOffsetDelta:], uint32(count-1))
	binary.BigEndian.PutUint64(b[offsetBaseTimestamp:], 1_700_000_000_000)
	binary.BigEndian.PutUint64(b[offsetMaxTimestamp:], 1_700_000_000_000)
	binary.BigEndian.PutUint64(b[offsetProducerID:], 0xffffffffffffffff)
	binary.BigEndian.PutUint16(b[offsetProducerEpoch:], 0xffff)
	binary.BigEndian.PutUint32(b[offsetBaseSequence:], 0xffffffff)
	binary.BigEndian.PutUint32(b[offsetRecordCount:], uint32(count))
	b = append(b, records...)
	binary.BigEndian.PutUint32(b[offsetCRC:], crc32.Checksum(b[offsetAttributes:], castagnoli))
	return b
}

func good(i int) rcRecord {
	return rcRecord{tsDelta: int64(i) * 3, offsetDelta: int64(i), key: []byte("k"), value: []byte("value"),
		headers: []rcHeader{{key: []byte("h"), value: []byte("v")}, {key: []byte("n")}}}
}

func section(recs ...rcRecord) []byte {
	var out []byte
	for _, r := range recs {
		out = append(out, r.encode()...)
	}
	return out
}

// checkRecordsCases are record-field inconsistencies, each with the error it must give
// and the text the message must hold (the record's index).
var checkRecordsCases = []struct {
	name    string
	records []byte
	count   int32
	err     error
	msg     string
	// streamErr, when set, is the error of the streaming path, which refuses a record
	// claiming more than the decompression limit before reading it.
	streamErr error
}{
	{"valid", section(good(0), good(1), good(2)), 3, nil, "", nil},
	{"null key and value, no headers", section(rcRecord{offsetDelta: 0}), 1, nil, "", nil},
	{"length claims 1 GiB", section(rcRecord{length: p64(1 << 30)}), 1, ErrInvalidRecord, "record 0 claims 1073741824 bytes", ErrRecordsTooLarge},
	{"negative length", section(good(0), rcRecord{offsetDelta: 1, length: p64(-3)}), 2, ErrInvalidRecord, "record 1 has a negative length", nil},
	{"length longer than its fields", section(rcRecord{pad: []byte{0, 0}}), 1, ErrInvalidRecord, "record 0's fields take", nil},
	{"length shorter than its fields", section(func() rcRecord { r := good(0); r.length = p64(4); return r }(), good(1)), 2, ErrInvalidRecord, "record 0", nil},
	{"first offset delta 1", section(rcRecord{offsetDelta: 1}), 1, ErrInvalidRecord, "record 0 has offset delta 1, want 0", nil},
	{"offset deltas skip", section(good(0), good(2)), 2, ErrInvalidRecord, "record 1 has offset delta 2, want 1", nil},
	{"offset deltas repeat", section(good(0), good(1), good(1)), 3, ErrInvalidRecord, "record 2 has offset delta 1", nil},
	{"negative offset delta", section(rcRecord{offsetDelta: -1}), 1, ErrInvalidRecord, "record 0 has offset delta -1", nil},
	{"fewer records than the count", section(good(0), good(1)), 3, ErrInvalidRecord, "record 2 is cut short", nil},
	{"more records than the count", section(good(0), good(1)), 1, ErrInvalidRecord, "bytes follow record 0", nil},
	{"trailing garbage", append(section(good(0)), 0xde, 0xad), 1, ErrInvalidRecord, "bytes follow record 0", nil},
	{"empty section", nil, 1, ErrInvalidRecord, "record 0 is cut short", nil},
	{"key length -2", section(rcRecord{keyLen: p64(-2)}), 1, ErrInvalidRecord, "record 0 has a key length of -2", nil},
	{"key past the record", section(rcRecord{key: []byte("k"), keyLen: p64(50)}), 1, ErrInvalidRecord, "record 0 has a 50-byte key", nil},
	{"value past the record", section(good(0), rcRecord{offsetDelta: 1, value: []byte("v"), valueLen: p64(1 << 20)}), 2, ErrInvalidRecord, "record 1 has a 1048576-byte value", nil},
	{"negative header count", section(rcRecord{headerCount: p64(-1)}), 1, ErrInvalidRecord, "record 0 has a header count of -1", nil},
	{"header count past the record", section(rcRecord{headerCount: p64(1 << 30)}), 1, ErrInvalidRecord, "record 0 has a header count of 1073741824", nil},
	{"null header key", section(rcRecord{headers: []rcHeader{{value: []byte("v")}}}), 1, ErrInvalidRecord, "record 0 has a header key length of -1", nil},
	{"header value past the record", section(rcRecord{headers: []rcHeader{{key: []byte("h"), value: []byte("v"), valueLen: p64(9)}}}), 1, ErrInvalidRecord, "record 0 has a 9-byte header value", nil},
	{"header value length -5", section(rcRecord{headers: []rcHeader{{key: []byte("h"), valueLen: p64(-5)}}}), 1, ErrInvalidRecord, "header value length of -5", nil},
	{"overlong offset delta varint", section(rcRecord{overlongOff: true}), 1, ErrInvalidRecord, "record 0 has an overlong offset delta varint", nil},
	{"length beyond int32", section(rcRecord{length: p64(1 << 40)}), 1, ErrInvalidRecord, "record 0 has an overlong length varint", nil},
	{"truncated length varint", []byte{0x80}, 1, ErrInvalidRecord, "record 0 is cut short in its length", nil},
	{"record cut inside its value", section(good(0))[:8], 1, ErrInvalidRecord, "record 0", nil},
}

func TestCheckRecordsUncompressed(t *testing.T) {
	for _, c := range checkRecordsCases {
		t.Run(c.name, func(t *testing.T) {
			b := rcBatch(c.records, c.count, 0)
			if _, err := ValidateBatch(b); err != nil {
				t.Fatalf("the header is not valid: %v", err)
			}
			orig := bytes.Clone(b)
			_, err := CheckRecords(b, nil, 1<<20, nil)
			checkRecordsErr(t, err, c.err, c.msg)
			if !bytes.Equal(b, orig) {
				t.Fatal("CheckRecords modified the batch")
			}
		})
	}
}

// TestCheckRecordsStreamed runs the same cases through the streaming path, one byte per
// read into the smallest scratch buffer, so that every field straddles a refill.
func TestCheckRecordsStreamed(t *testing.T) {
	for _, c := range checkRecordsCases {
		t.Run(c.name, func(t *testing.T) {
			b := rcBatch([]byte("compressed bytes are not read by CheckRecords itself"), c.count, 1)
			src := iotest.OneByteReader(bytes.NewReader(c.records))
			sum, err := CheckRecords(b, src, 1<<20, make([]byte, MinRecordsScratch))
			if c.streamErr != nil {
				checkRecordsErr(t, err, c.streamErr, c.msg)
			} else {
				checkRecordsErr(t, err, c.err, c.msg)
			}
			if err == nil && sum.Bytes != int64(len(c.records)) {
				t.Fatalf("summary says %d bytes, the section has %d", sum.Bytes, len(c.records))
			}
		})
	}
}

func checkRecordsErr(t *testing.T, err, want error, msg string) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want == nil:
	case !errors.Is(err, want):
		t.Fatalf("error %v, want %v", err, want)
	case !strings.Contains(err.Error(), msg):
		t.Fatalf("error %q does not say %q", err, msg)
	}
}

func TestCheckRecordsSummary(t *testing.T) {
	recs := []rcRecord{good(0), good(1), good(2)}
	recs[1].tsDelta = 500
	b := rcBatch(section(recs...), 3, 0)
	sum, err := CheckRecords(b, nil, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.MaxTimestamp != 1_700_000_000_500 || sum.Bytes != int64(len(b)-BatchHeaderSize) {
		t.Fatalf("summary %+v", sum)
	}
	// A kmsg-built batch in every codec checks, streamed through the test decompressor.
	for _, c := range ctCodecs {
		spec := batchSpec{records: 50, valueSize: 100, baseTimestamp: 1 << 40, tsStep: 2, codec: c.codec, headers: true}
		b := makeBatch(t, spec)
		var src io.Reader
		if c.codec != 0 {
			raw, err := decompressForTest(c.codec, b[BatchHeaderSize:])
			if err != nil {
				t.Fatal(err)
			}
			src = bytes.NewReader(raw)
		}
		sum, err := CheckRecords(b, src, 1<<20, make([]byte, 100))
		if err != nil || sum.MaxTimestamp != 1<<40+98 {
			t.Fatalf("%s: %+v, %v", c.name, sum, err)
		}
	}
}

// errReader fails after its data.
type errReader struct {
	data []byte
	err  error
}

func (r *errReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestCheckRecordsLimitAndStreamErrors(t *testing.T) {
	recs := section(good(0), good(1), good(2))
	batch := rcBatch([]byte("x"), 3, 4)
	scratch := make([]byte, MinRecordsScratch)
	cases := []struct {
		name  string
		src   io.Reader
		limit int64
		err   error
		msg   string
	}{
		{"exactly at the limit", bytes.NewReader(recs), int64(len(recs)), nil, ""},
		{"one byte past the limit", bytes.NewReader(append(bytes.Clone(recs), 0)), int64(len(recs)), ErrRecordsTooLarge, "limit"},
		{"section past the limit", bytes.NewReader(recs), int64(len(recs) - 1), ErrRecordsTooLarge, ""},
		{"record claims past the limit", bytes.NewReader(section(rcRecord{length: p64(1 << 30)})), 1 << 20, ErrRecordsTooLarge, "record 0 claims 1073741824 bytes"},
		{"decoder fails mid-way", &errReader{recs[:10], errors.New("flate: corrupt input")}, 1 << 20, ErrUndecodableRecords, "corrupt input"},
		{"decoder fails at the end (checksum)", &errReader{recs, errors.New("gzip: invalid checksum")}, 1 << 20, ErrUndecodableRecords, "invalid checksum"},
		{"decoder reports the limit", &errReader{nil, ErrRecordsTooLarge}, 1 << 20, ErrRecordsTooLarge, ""},
		{"premature end of stream", bytes.NewReader(recs[:len(recs)-3]), 1 << 20, ErrInvalidRecord, "record 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := CheckRecords(batch, c.src, c.limit, scratch)
			checkRecordsErr(t, err, c.err, c.msg)
		})
	}
	// A bomb: a record claiming 1 GiB of zeros is refused after reading no more than the
	// limit (and a byte), however much the stream would give.
	bomb := io.MultiReader(bytes.NewReader(section(rcRecord{length: p64(1<<20 - 10)})), &zeros{n: 1 << 30})
	counter := &countingReader{r: bomb}
	if _, err := CheckRecords(rcBatch([]byte("x"), 1, 1), counter, 1<<20, scratch); !errors.Is(err, ErrInvalidRecord) && !errors.Is(err, ErrRecordsTooLarge) {
		t.Fatalf("bomb: %v", err)
	}
	if counter.n > 1<<20+1 {
		t.Fatalf("read %d bytes of the stream, the limit is %d", counter.n, 1<<20)
	}
	if _, err := CheckRecords(batch, bytes.NewReader(recs), 1<<20, make([]byte, 10)); err == nil {
		t.Fatal("a scratch buffer below MinRecordsScratch was accepted")
	}
}

type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n == 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), z.n)
	clear(p[:k])
	z.n -= k
	return int(k), nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
