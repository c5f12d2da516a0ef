package share

import (
	"encoding/binary"
	"fmt"
)

// Decoded is a decoded __share_group_state record: Snapshot for a ShareSnapshot,
// Update for a ShareUpdate, both nil for a tombstone.
type Decoded struct {
	Type     int16
	Key      Key
	Snapshot *State
	Update   *UpdateValue
}

// DecodeRecord decodes a __share_group_state record. ok is false, with no error, for a
// record type this version does not know (Kafka's loader skips those too). A known
// record that does not parse, or a value version other than 0, is ErrCorruptRecord.
func DecodeRecord(key, value []byte) (d Decoded, ok bool, err error) {
	r := dec{b: key}
	d.Type = r.i16()
	if r.err != nil {
		return d, false, r.err
	}
	if d.Type != RecordTypeShareSnapshot && d.Type != RecordTypeShareUpdate {
		return d, false, nil
	}
	d.Key.GroupID = r.str()
	copy(d.Key.TopicID[:], r.take(16))
	d.Key.Partition = r.i32()
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d bytes after the key", len(r.b))
	}
	if r.err != nil || value == nil {
		return d, true, r.err
	}
	r = dec{b: value}
	if v := r.i16(); r.err == nil && v != valueVersion {
		return d, true, fmt.Errorf("%w: value version %d of record type %d", ErrCorruptRecord, v, d.Type)
	}
	if d.Type == RecordTypeShareSnapshot {
		s := &State{SnapshotEpoch: r.i32(), StateEpoch: r.i32(), LeaderEpoch: r.i32(), StartOffset: r.i64(),
			CreateTimestampMs: r.i64(), WriteTimestampMs: r.i64()}
		s.Batches = r.batches()
		s.DeliveryCompleteCount = r.tags()
		d.Snapshot = s
	} else {
		u := &UpdateValue{SnapshotEpoch: r.i32(), LeaderEpoch: r.i32(), StartOffset: r.i64()}
		u.Batches = r.batches()
		u.DeliveryCompleteCount = r.tags()
		d.Update = u
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d bytes after the value", len(r.b))
	}
	return d, true, r.err
}

// dec reads Kafka's encodings; the first failure sticks in err and later reads return
// zero values.
type dec struct {
	b   []byte
	err error
}

func (r *dec) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrCorruptRecord, fmt.Sprintf(format, args...))
	}
	r.b = nil
}

func (r *dec) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.fail("need %d bytes, have %d", n, len(r.b))
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *dec) i8() int8 {
	if p := r.take(1); p != nil {
		return int8(p[0])
	}
	return 0
}

func (r *dec) i16() int16 {
	if p := r.take(2); p != nil {
		return int16(binary.BigEndian.Uint16(p))
	}
	return 0
}

func (r *dec) i32() int32 {
	if p := r.take(4); p != nil {
		return int32(binary.BigEndian.Uint32(p))
	}
	return 0
}

func (r *dec) i64() int64 {
	if p := r.take(8); p != nil {
		return int64(binary.BigEndian.Uint64(p))
	}
	return 0
}

func (r *dec) uvarint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > 1<<31 {
		r.fail("bad unsigned varint")
		return 0
	}
	r.b = r.b[n:]
	return int64(v)
}

// str reads a non-flexible string (int16 length, not null).
func (r *dec) str() string {
	n := r.i16()
	if n < 0 {
		r.fail("null string")
		return ""
	}
	return string(r.take(int(n)))
}

// batches reads a compact array of state batches.
func (r *dec) batches() []StateBatch {
	n := r.uvarint() - 1
	if n < 0 {
		r.fail("null state batches")
		return nil
	}
	if n > int64(len(r.b))/20 { // each batch takes at least 20 bytes
		r.fail("%d state batches in %d bytes", n, len(r.b))
		return nil
	}
	bs := make([]StateBatch, 0, n)
	for range n {
		b := StateBatch{FirstOffset: r.i64(), LastOffset: r.i64(), DeliveryState: RecordState(r.i8()), DeliveryCount: r.i16()}
		r.skipTags()
		if r.err != nil {
			return nil
		}
		switch b.DeliveryState {
		case Available, Acknowledged, Archived:
		default:
			r.fail("delivery state %d", b.DeliveryState)
			return nil
		}
		if b.LastOffset < b.FirstOffset {
			r.fail("state batch %d to %d", b.FirstOffset, b.LastOffset)
			return nil
		}
		bs = append(bs, b)
	}
	return bs
}

// skipTags reads past a tagged-field section with no field this version knows.
func (r *dec) skipTags() {
	for n := r.uvarint(); n > 0 && r.err == nil; n-- {
		r.uvarint()
		r.take(int(r.uvarint()))
	}
}

// tags reads a value's tagged-field section and returns DeliveryCompleteCount (-1 when
// absent).
func (r *dec) tags() int32 {
	count := int32(noDeliveryCompleteCount)
	for n := r.uvarint(); n > 0 && r.err == nil; n-- {
		tag, size := r.uvarint(), r.uvarint()
		if tag == tagDeliveryCompleteCount {
			if size != 4 {
				r.fail("deliveryCompleteCount of %d bytes", size)
				return count
			}
			count = r.i32()
			continue
		}
		r.take(int(size))
	}
	return count
}
