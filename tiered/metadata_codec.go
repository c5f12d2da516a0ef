package tiered

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
)

// The binary encoding of RemoteLogSegmentMetadata, all integers big-endian:
//
//	version              int16   0
//	topicId              16 bytes
//	topic                int16 length, then the name's bytes
//	partition            int32
//	segmentId            16 bytes
//	startOffset          int64
//	endOffset            int64
//	maxTimestampMs       int64
//	eventTimestampMs     int64
//	brokerId             int32
//	segmentSizeInBytes   int32
//	state                int8
//	txnIdxEmpty          int8    0 or 1
//	leaderEpochs         int32 count, then count × (epoch int32, startOffset int64)
//	customMetadata       int32 length (-1: none), then its bytes
//
// A record must use every byte and pass Validate.
const metadataVersion = 0

// fixedMetadataBytes is the size of an encoding with an empty topic name, no epochs and
// no custom metadata.
const fixedMetadataBytes = 2 + 16 + 2 + 4 + 16 + 4*8 + 4 + 4 + 1 + 1 + 4 + 4

// epochEntryBytes is the size of one leader epoch entry.
const epochEntryBytes = 4 + 8

// MarshalBinary encodes m in the binary encoding; m must pass Validate.
func (m *RemoteLogSegmentMetadata) MarshalBinary() ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if len(m.CustomMetadata) > math.MaxInt32 {
		return nil, fmt.Errorf("%w: custom metadata of %d bytes", ErrInvalidMetadata, len(m.CustomMetadata))
	}
	tp := m.SegmentID.TopicIDPartition
	b := make([]byte, 0, fixedMetadataBytes+len(tp.Topic)+len(m.SegmentLeaderEpochs)*epochEntryBytes+len(m.CustomMetadata))
	b = binary.BigEndian.AppendUint16(b, metadataVersion)
	b = append(b, tp.TopicID[:]...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(tp.Topic)))
	b = append(b, tp.Topic...)
	b = binary.BigEndian.AppendUint32(b, uint32(tp.Partition))
	b = append(b, m.SegmentID.ID[:]...)
	for _, v := range []int64{m.StartOffset, m.EndOffset, m.MaxTimestampMs, m.EventTimestampMs} {
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	b = binary.BigEndian.AppendUint32(b, uint32(m.BrokerID))
	b = binary.BigEndian.AppendUint32(b, uint32(m.SegmentSizeInBytes))
	b = append(b, byte(m.State))
	if m.TxnIdxEmpty {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(m.SegmentLeaderEpochs)))
	for _, e := range m.SegmentLeaderEpochs {
		b = binary.BigEndian.AppendUint32(b, uint32(e.Epoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.StartOffset))
	}
	if m.CustomMetadata == nil {
		b = binary.BigEndian.AppendUint32(b, math.MaxUint32) // -1
	} else {
		b = binary.BigEndian.AppendUint32(b, uint32(len(m.CustomMetadata)))
		b = append(b, m.CustomMetadata...)
	}
	return b, nil
}

// UnmarshalBinary decodes the binary encoding. Anything else — truncated, trailing
// bytes, an unknown version, lengths past the input, values Validate refuses — is
// ErrInvalidMetadata; it never allocates more than the input's size.
func (m *RemoteLogSegmentMetadata) UnmarshalBinary(data []byte) error {
	r := metadataReader{b: data}
	var out RemoteLogSegmentMetadata
	if v := r.int16(); v != metadataVersion && r.err == nil {
		return fmt.Errorf("%w: version %d", ErrInvalidMetadata, v)
	}
	tp := &out.SegmentID.TopicIDPartition
	r.uuid(&tp.TopicID)
	tp.Topic = string(r.bytes(int(r.int16())))
	tp.Partition = r.int32()
	r.uuid(&out.SegmentID.ID)
	out.StartOffset = r.int64()
	out.EndOffset = r.int64()
	out.MaxTimestampMs = r.int64()
	out.EventTimestampMs = r.int64()
	out.BrokerID = r.int32()
	out.SegmentSizeInBytes = r.int32()
	out.State = RemoteLogSegmentState(r.int8())
	switch r.int8() {
	case 0:
	case 1:
		out.TxnIdxEmpty = true
	default:
		r.fail("txnIdxEmpty is neither 0 nor 1")
	}
	n := r.int32()
	if r.err == nil && (n < 0 || int64(n) > int64(r.remaining()/epochEntryBytes)) {
		r.fail(fmt.Sprintf("%d leader epochs in %d bytes", n, r.remaining()))
	}
	if r.err == nil && n > 0 {
		out.SegmentLeaderEpochs = make([]EpochStart, n)
		for i := range out.SegmentLeaderEpochs {
			out.SegmentLeaderEpochs[i] = EpochStart{Epoch: r.int32(), StartOffset: r.int64()}
		}
	}
	if l := r.int32(); l != -1 {
		out.CustomMetadata = bytes.Clone(r.bytes(int(l)))
		if out.CustomMetadata == nil && r.err == nil {
			out.CustomMetadata = []byte{}
		}
	}
	if r.err == nil && r.remaining() != 0 {
		r.fail(fmt.Sprintf("%d bytes after the record", r.remaining()))
	}
	if r.err != nil {
		return r.err
	}
	if err := out.Validate(); err != nil {
		return err
	}
	*m = out
	return nil
}

// UnmarshalJSON decodes the JSON form (the struct's field names) and validates it.
func (m *RemoteLogSegmentMetadata) UnmarshalJSON(data []byte) error {
	type plain RemoteLogSegmentMetadata // without this method
	var out plain
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidMetadata, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: data after the JSON object", ErrInvalidMetadata)
	}
	md := RemoteLogSegmentMetadata(out)
	if err := md.Validate(); err != nil {
		return err
	}
	*m = md
	return nil
}

// metadataReader reads the binary encoding; the first failure sticks and later reads
// return zeros.
type metadataReader struct {
	b   []byte
	err error
}

func (r *metadataReader) remaining() int { return len(r.b) }

func (r *metadataReader) fail(why string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrInvalidMetadata, why)
	}
}

func (r *metadataReader) bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.fail(fmt.Sprintf("%d bytes wanted, %d left", n, len(r.b)))
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *metadataReader) int8() int8 {
	if b := r.bytes(1); b != nil {
		return int8(b[0])
	}
	return 0
}

func (r *metadataReader) int16() int16 {
	if b := r.bytes(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *metadataReader) int32() int32 {
	if b := r.bytes(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *metadataReader) int64() int64 {
	if b := r.bytes(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

func (r *metadataReader) uuid(u *Uuid) {
	if b := r.bytes(len(u)); b != nil {
		copy(u[:], b)
	}
}
