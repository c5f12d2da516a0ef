package group

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The __consumer_offsets records, byte for byte as Kafka writes them (group-coordinator's
// OffsetCommitKey/Value.json and GroupMetadataKey/Value.json), so that
// kafka-dump-log.sh --offsets-decoder reads Petrel's files:
//
//	key   = int16 key type (record type), then the key's fields
//	        type 0 or 1: offset commit: group string, topic string, partition int32
//	        type 2:      group metadata: group string
//	        type 3-8, 16: KIP-848 consumer groups (records_consumer.go, not replayed yet)
//	        type 9-15, 17+: share and streams groups (skipped here)
//	value = int16 value version, then the value's fields; a null value is a tombstone
//
// OffsetCommitValue (written at v3, v1 when the commit carries an expire timestamp):
//
//	offset int64 | leaderEpoch int32 (v3+) | metadata string | commitTimestamp int64 |
//	expireTimestamp int64 (v1 only)                                  (v4+: flexible)
//
// GroupMetadataValue (written at v3):
//
//	protocolType string | generation int32 | protocol nullable string |
//	leader nullable string | currentStateTimestamp int64 (v2+) | members array of
//	  memberId string | groupInstanceId nullable string (v3+) | clientId string |
//	  clientHost string | rebalanceTimeout int32 (v1+) | sessionTimeout int32 |
//	  subscription bytes | assignment bytes                          (v4+: flexible)
//
// Non-flexible versions use int16-length strings (-1 null), int32-length bytes and
// int32-count arrays, big-endian; flexible ones (v4) use unsigned-varint lengths plus one
// and a tagged-field section after each structure.
const (
	keyTypeOffsetCommitV0 = 0
	keyTypeOffsetCommit   = 1
	keyTypeGroupMetadata  = 2

	offsetCommitValueVersion       = 3
	offsetCommitValueExpireVersion = 1
	groupMetadataValueVersion      = 3
)

// groupMetadataValue is a decoded GroupMetadataValue.
type groupMetadataValue struct {
	protocolType          string
	generation            int32
	protocol              *string
	leader                *string
	currentStateTimestamp int64 // -1 when absent (v0, v1)
	members               []memberMetadataValue
}

// memberMetadataValue is one member of a GroupMetadataValue.
type memberMetadataValue struct {
	memberID         string
	groupInstanceID  *string
	clientID         string
	clientHost       string
	rebalanceTimeout int32 // -1 when absent (v0)
	sessionTimeout   int32
	subscription     []byte
	assignment       []byte
}

// maxRecordString is the longest string the records' non-flexible (int16 length)
// encodings hold.
const maxRecordString = math.MaxInt16

// fitsRecord reports whether s can be stored in a record as it is.
func fitsRecord(s string) bool { return len(s) <= maxRecordString }

// writer appends Kafka's encodings: non-flexible (int16-length strings, int32-length
// bytes) unless flexible, where lengths are unsigned varints of length+1 (0 for null).
type writer struct {
	b        []byte
	flexible bool
}

func (w *writer) int16(v int16)    { w.b = binary.BigEndian.AppendUint16(w.b, uint16(v)) }
func (w *writer) int32(v int32)    { w.b = binary.BigEndian.AppendUint32(w.b, uint32(v)) }
func (w *writer) int64(v int64)    { w.b = binary.BigEndian.AppendUint64(w.b, uint64(v)) }
func (w *writer) uvarint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *writer) string(s string) {
	if len(s) > maxRecordString {
		// Unreachable: requests carrying longer strings are refused up front
		// (fitsRecord). Cutting would store a different id than the one in use.
		panic(fmt.Sprintf("group: a %d-byte string reached a record (at most %d)", len(s), maxRecordString))
	}
	if w.flexible {
		w.uvarint(uint64(len(s)) + 1)
	} else {
		w.int16(int16(len(s)))
	}
	w.b = append(w.b, s...)
}
func (w *writer) nullableString(s *string) {
	if s == nil {
		if w.flexible {
			w.uvarint(0)
		} else {
			w.int16(-1)
		}
		return
	}
	w.string(*s)
}
func (w *writer) bytes(p []byte) {
	if w.flexible {
		w.uvarint(uint64(len(p)) + 1)
	} else {
		w.int32(int32(len(p)))
	}
	w.b = append(w.b, p...)
}

func offsetCommitKey(groupID string, tp topicPartition) []byte {
	var w writer
	w.int16(keyTypeOffsetCommit)
	w.string(groupID)
	w.string(tp.topic)
	w.int32(tp.partition)
	return w.b
}

func groupMetadataKey(groupID string) []byte {
	var w writer
	w.int16(keyTypeGroupMetadata)
	w.string(groupID)
	return w.b
}

// encodeOffsetCommitValue writes v3, or v1 when the commit has an expire timestamp.
func encodeOffsetCommitValue(v offsetValue) []byte {
	var w writer
	if v.expireTimestampMs >= 0 {
		w.int16(offsetCommitValueExpireVersion)
		w.int64(v.offset)
		w.string(v.metadata)
		w.int64(v.commitTimestampMs)
		w.int64(v.expireTimestampMs)
		return w.b
	}
	w.int16(offsetCommitValueVersion)
	w.int64(v.offset)
	w.int32(v.leaderEpoch)
	w.string(v.metadata)
	w.int64(v.commitTimestampMs)
	return w.b
}

func encodeGroupMetadataValue(v groupMetadataValue) []byte {
	var w writer
	w.int16(groupMetadataValueVersion)
	w.string(v.protocolType)
	w.int32(v.generation)
	w.nullableString(v.protocol)
	w.nullableString(v.leader)
	w.int64(v.currentStateTimestamp)
	w.int32(int32(len(v.members)))
	for _, m := range v.members {
		w.string(m.memberID)
		w.nullableString(m.groupInstanceID)
		w.string(m.clientID)
		w.string(m.clientHost)
		w.int32(m.rebalanceTimeout)
		w.int32(m.sessionTimeout)
		w.bytes(m.subscription)
		w.bytes(m.assignment)
	}
	return w.b
}

func offsetCommitRecord(groupID string, tp topicPartition, v offsetValue) Record {
	return Record{Key: offsetCommitKey(groupID, tp), Value: encodeOffsetCommitValue(v)}
}

func offsetCommitTombstone(groupID string, tp topicPartition) Record {
	return Record{Key: offsetCommitKey(groupID, tp)}
}

func groupMetadataTombstone(groupID string) Record {
	return Record{Key: groupMetadataKey(groupID)}
}

// groupMetadataRecord is the group's metadata with assignment (nil: the members' current
// assignments), as Kafka's newGroupMetadataRecord.
func (s *Shard) groupMetadataRecord(g *group, assignment map[string][]byte) Record {
	v := groupMetadataValue{
		protocolType:          g.protocolType,
		generation:            g.generation,
		currentStateTimestamp: g.stateTimestampMs,
	}
	if g.protocol != "" {
		p := g.protocol
		v.protocol = &p
	}
	if g.leader != "" {
		l := g.leader
		v.leader = &l
	}
	for _, m := range g.all() {
		a := m.assignment
		if assignment != nil {
			a = assignment[m.id]
		}
		if a == nil {
			a = []byte{}
		}
		sub := m.metadata(g.protocol)
		if sub == nil {
			sub = []byte{}
		}
		v.members = append(v.members, memberMetadataValue{
			memberID:         m.id,
			groupInstanceID:  m.instanceID,
			clientID:         m.clientID,
			clientHost:       m.clientHost,
			rebalanceTimeout: m.rebalanceTimeoutMs,
			sessionTimeout:   m.sessionTimeoutMs,
			subscription:     sub,
			assignment:       a,
		})
	}
	return Record{Key: groupMetadataKey(g.id), Value: encodeGroupMetadataValue(v)}
}

// reader decodes Kafka's encodings; the first failure sticks in err.
type reader struct {
	b        []byte
	flexible bool
	err      error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: short or bad %s", ErrCorruptRecord, what)
	}
	r.b = nil
}

func (r *reader) take(n int, what string) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		r.fail(what)
		return nil
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p
}

func (r *reader) int16() int16 {
	p := r.take(2, "int16")
	if p == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(p))
}

func (r *reader) int32() int32 {
	p := r.take(4, "int32")
	if p == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(p))
}

func (r *reader) int64() int64 {
	p := r.take(8, "int64")
	if p == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(p))
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// length reads a length: int16/int32 (non-flexible) or uvarint+1 (flexible); -1 is null.
func (r *reader) length(wide bool) int {
	if r.flexible {
		v := r.uvarint()
		if v > uint64(len(r.b))+1 {
			r.fail("length")
			return 0
		}
		return int(v) - 1
	}
	if wide {
		return int(r.int32())
	}
	return int(r.int16())
}

func (r *reader) nullableString() *string {
	n := r.length(false)
	if r.err != nil || n < 0 {
		return nil
	}
	s := string(r.take(n, "string"))
	return &s
}

func (r *reader) string() string {
	s := r.nullableString()
	if s == nil {
		if r.err == nil {
			r.fail("non-null string")
		}
		return ""
	}
	return *s
}

func (r *reader) bytes() []byte {
	n := r.length(true)
	if r.err != nil || n < 0 {
		if r.err == nil {
			r.fail("non-null bytes")
		}
		return nil
	}
	return append([]byte{}, r.take(n, "bytes")...)
}

func (r *reader) arrayLength() int {
	n := r.length(true)
	// Every element takes at least one byte: a larger count is corrupt.
	if r.err == nil && (n < 0 || n > len(r.b)) {
		r.fail("array length")
		return 0
	}
	return n
}

// tags skips a flexible structure's tagged fields.
func (r *reader) tags() {
	if !r.flexible {
		return
	}
	n := r.uvarint()
	for i := uint64(0); i < n && r.err == nil; i++ {
		r.uvarint() // tag
		size := r.uvarint()
		if size > uint64(len(r.b)) {
			r.fail("tagged field")
			return
		}
		r.take(int(size), "tagged field")
	}
}

// decodedKey is a decoded __consumer_offsets key.
type decodedKey struct {
	keyType int16
	group   string
	tp      topicPartition // offset commit keys only
}

// decodeKey decodes a key; known is false for key types this build does not handle.
func decodeKey(key []byte) (k decodedKey, known bool, err error) {
	r := reader{b: key}
	k.keyType = r.int16()
	if r.err != nil {
		return k, false, r.err
	}
	switch k.keyType {
	case keyTypeOffsetCommitV0, keyTypeOffsetCommit:
		k.group = r.string()
		k.tp.topic = r.string()
		k.tp.partition = r.int32()
	case keyTypeGroupMetadata:
		k.group = r.string()
	default:
		return k, false, nil
	}
	return k, true, r.err
}

func decodeOffsetCommitValue(value []byte) (offsetValue, error) {
	r := reader{b: value}
	version := r.int16()
	if r.err == nil && (version < 0 || version > 4) {
		return offsetValue{}, fmt.Errorf("%w: offset commit value version %d", ErrCorruptRecord, version)
	}
	r.flexible = version >= 4
	v := offsetValue{leaderEpoch: -1, expireTimestampMs: -1}
	v.offset = r.int64()
	if version >= 3 {
		v.leaderEpoch = r.int32()
	}
	v.metadata = r.string()
	v.commitTimestampMs = r.int64()
	if version == 1 {
		v.expireTimestampMs = r.int64()
	}
	r.tags()
	return v, r.err
}

func decodeGroupMetadataValue(value []byte) (groupMetadataValue, error) {
	r := reader{b: value}
	version := r.int16()
	if r.err == nil && (version < 0 || version > 4) {
		return groupMetadataValue{}, fmt.Errorf("%w: group metadata value version %d", ErrCorruptRecord, version)
	}
	r.flexible = version >= 4
	v := groupMetadataValue{currentStateTimestamp: -1}
	v.protocolType = r.string()
	v.generation = r.int32()
	v.protocol = r.nullableString()
	v.leader = r.nullableString()
	if version >= 2 {
		v.currentStateTimestamp = r.int64()
	}
	n := r.arrayLength()
	for i := 0; i < n && r.err == nil; i++ {
		m := memberMetadataValue{rebalanceTimeout: -1}
		m.memberID = r.string()
		if version >= 3 {
			m.groupInstanceID = r.nullableString()
		}
		m.clientID = r.string()
		m.clientHost = r.string()
		if version >= 1 {
			m.rebalanceTimeout = r.int32()
		}
		m.sessionTimeout = r.int32()
		m.subscription = r.bytes()
		m.assignment = r.bytes()
		r.tags()
		v.members = append(v.members, m)
	}
	r.tags()
	return v, r.err
}
