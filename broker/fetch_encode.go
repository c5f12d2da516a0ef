package broker

// The Fetch response as bytes plus file ranges (issue #13 item 1): the record sets of a
// fetch stay in the segment files, pinned by segment.Hold, and the rpc writer sends
// them by sendfile between the encoded bytes (rpc.PartsResponse). appendFetchParts
// writes exactly kmsg's encoding of FetchResponse v4-v12 with each RecordBatches
// replaced by its section (fetch_encode_test.go and FuzzFetchParts hold it to that);
// a response carrying anything this encoder does not write (unknown tags, the v16
// Brokers tag) is encoded by kmsg with the records read in.

import (
	"encoding/binary"

	"github.com/petrel-broker/petrel/rpc"
	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchAnswer is a Fetch response whose record sets are held file ranges: held has
// one entry per partition in response order (topic by topic), nil where the records
// are the partition's RecordBatches.
type fetchAnswer struct {
	*kmsg.FetchResponse
	held []*segment.Hold
	// changes sums the partitions' Changes() as of the reads (01_fetch.go, replication.ParkFetch).
	changes uint64
	// throttled: a partition's records were left out by a replication quota, which
	// time alone lifts (throttle.go).
	throttled bool
	// behind: a partition's read came from a segment older than the one holding its
	// high watermark (Kafka's DelayedFetch: "the fetch is falling behind the current
	// segment"), so the fetch answers at once, whatever min_bytes says.
	behind bool
}

var _ rpc.PartsResponse = (*fetchAnswer)(nil)

// fetchResponseOf is the FetchResponse of a Fetch handler's answer: a *fetchAnswer
// (held record sets) or a plain *kmsg.FetchResponse. Code that edits a Fetch response
// after the handler (authorization, quotas) goes through it.
func fetchResponseOf(resp kmsg.Response) *kmsg.FetchResponse {
	if a, ok := resp.(*fetchAnswer); ok {
		return a.FetchResponse
	}
	return resp.(*kmsg.FetchResponse)
}

// Release lets go of every held range; a nil answer has none.
func (a *fetchAnswer) Release() {
	if a == nil {
		return
	}
	for i, h := range a.held {
		h.Release()
		a.held[i] = nil
	}
}

// recordBytes is the size of the record set of the i-th partition in response order.
func (a *fetchAnswer) recordBytes(i int, p *kmsg.FetchResponseTopicPartition) int {
	if i < len(a.held) && a.held[i] != nil {
		return int(a.held[i].Len())
	}
	return len(p.RecordBatches)
}

// section is the i-th partition's held range as an rpc.FileSection (Size 0: none).
func (a *fetchAnswer) section(i int) rpc.FileSection {
	if i >= len(a.held) || a.held[i] == nil {
		return rpc.FileSection{}
	}
	h := a.held[i]
	return rpc.FileSection{File: h.File, Offset: h.Position, Size: h.Size}
}

// AppendParts encodes the response body at its version, sections in place of the
// held record sets.
func (a *fetchAnswer) AppendParts(p *rpc.Parts) {
	if !fetchPartsEncodable(a.FetchResponse) {
		p.B = a.AppendTo(p.B)
		return
	}
	appendFetchParts(p, a.FetchResponse, a.section)
}

// AppendTo is kmsg's encoding with the held ranges read in: the copying path, for a
// response that must be encoded whole.
func (a *fetchAnswer) AppendTo(dst []byte) []byte {
	if !a.anyHeld() {
		return a.FetchResponse.AppendTo(dst)
	}
	c := *a.FetchResponse
	c.Topics = make([]kmsg.FetchResponseTopic, len(a.Topics))
	i := 0
	for ti, t := range a.Topics {
		c.Topics[ti] = t
		c.Topics[ti].Partitions = make([]kmsg.FetchResponseTopicPartition, len(t.Partitions))
		for pi, sp := range t.Partitions {
			if s := a.section(i); s.Size > 0 {
				b, err := a.held[i].Bytes()
				if err != nil {
					b = []byte{} // unreadable now: an empty record set, as for data gone
				}
				sp.RecordBatches = b
			}
			c.Topics[ti].Partitions[pi] = sp
			i++
		}
	}
	return c.AppendTo(dst)
}

func (a *fetchAnswer) anyHeld() bool {
	for _, h := range a.held {
		if h != nil {
			return true
		}
	}
	return false
}

// fetchPartsEncodable reports whether appendFetchParts writes everything resp holds:
// versions 4-12, no unknown tags, no Brokers.
func fetchPartsEncodable(r *kmsg.FetchResponse) bool {
	if r.Version < 4 || r.Version > 12 || r.UnknownTags.Len() > 0 || len(r.Brokers) > 0 {
		return false
	}
	for _, t := range r.Topics {
		if t.UnknownTags.Len() > 0 {
			return false
		}
		for _, p := range t.Partitions {
			if p.UnknownTags.Len() > 0 || p.DivergingEpoch.UnknownTags.Len() > 0 ||
				p.CurrentLeader.UnknownTags.Len() > 0 || p.SnapshotID.UnknownTags.Len() > 0 {
				return false
			}
			for _, at := range p.AbortedTransactions {
				if at.UnknownTags.Len() > 0 {
					return false
				}
			}
		}
	}
	return true
}

// appendFetchParts encodes r (versions 4-12, fetchPartsEncodable) field by field in
// the protocol's order; section(i) gives the i-th partition's record set when its Size
// is positive, else the partition's RecordBatches are encoded inline.
func appendFetchParts(p *rpc.Parts, r *kmsg.FetchResponse, section func(i int) rpc.FileSection) {
	v := r.Version
	flex := v >= 12
	b := p.B
	b = binary.BigEndian.AppendUint32(b, uint32(r.ThrottleMillis))
	if v >= 7 {
		b = binary.BigEndian.AppendUint16(b, uint16(r.ErrorCode))
		b = binary.BigEndian.AppendUint32(b, uint32(r.SessionID))
	}
	b = fetchArrayLen(b, len(r.Topics), flex)
	i := 0
	for ti := range r.Topics {
		t := &r.Topics[ti]
		b = fetchString(b, t.Topic, flex)
		b = fetchArrayLen(b, len(t.Partitions), flex)
		for pi := range t.Partitions {
			sp := &t.Partitions[pi]
			b = binary.BigEndian.AppendUint32(b, uint32(sp.Partition))
			b = binary.BigEndian.AppendUint16(b, uint16(sp.ErrorCode))
			b = binary.BigEndian.AppendUint64(b, uint64(sp.HighWatermark))
			b = binary.BigEndian.AppendUint64(b, uint64(sp.LastStableOffset))
			if v >= 5 {
				b = binary.BigEndian.AppendUint64(b, uint64(sp.LogStartOffset))
			}
			if sp.AbortedTransactions == nil {
				b = fetchNullLen(b, flex)
			} else {
				b = fetchArrayLen(b, len(sp.AbortedTransactions), flex)
				for _, at := range sp.AbortedTransactions {
					b = binary.BigEndian.AppendUint64(b, uint64(at.ProducerID))
					b = binary.BigEndian.AppendUint64(b, uint64(at.FirstOffset))
					if flex {
						b = append(b, 0) // no tagged fields
					}
				}
			}
			if v >= 11 {
				b = binary.BigEndian.AppendUint32(b, uint32(sp.PreferredReadReplica))
			}
			if s := section(i); s.Size > 0 {
				b = fetchBytesLen(b, int(s.Size), flex)
				p.B = b
				p.AddSection(s)
				b = p.B
			} else if sp.RecordBatches == nil {
				b = fetchNullLen(b, flex)
			} else {
				b = fetchBytesLen(b, len(sp.RecordBatches), flex)
				b = append(b, sp.RecordBatches...)
			}
			if flex {
				b = appendPartitionTags(b, sp)
			}
			i++
		}
		if flex {
			b = append(b, 0) // the topic's tagged fields
		}
	}
	if flex {
		b = append(b, 0) // the response's tagged fields
	}
	p.B = b
}

// appendPartitionTags writes a v12 partition's tagged fields: DivergingEpoch (0),
// CurrentLeader (1) and SnapshotId (2), each only when not at its default (-1, -1).
func appendPartitionTags(b []byte, sp *kmsg.FetchResponseTopicPartition) []byte {
	diverging := sp.DivergingEpoch.Epoch != -1 || sp.DivergingEpoch.EndOffset != -1
	leader := sp.CurrentLeader.LeaderID != -1 || sp.CurrentLeader.LeaderEpoch != -1
	snapshot := sp.SnapshotID.EndOffset != -1 || sp.SnapshotID.Epoch != -1
	n := byte(0)
	for _, set := range [...]bool{diverging, leader, snapshot} {
		if set {
			n++
		}
	}
	b = append(b, n)
	if diverging {
		b = append(b, 0, 4+8+1)
		b = binary.BigEndian.AppendUint32(b, uint32(sp.DivergingEpoch.Epoch))
		b = binary.BigEndian.AppendUint64(b, uint64(sp.DivergingEpoch.EndOffset))
		b = append(b, 0)
	}
	if leader {
		b = append(b, 1, 4+4+1)
		b = binary.BigEndian.AppendUint32(b, uint32(sp.CurrentLeader.LeaderID))
		b = binary.BigEndian.AppendUint32(b, uint32(sp.CurrentLeader.LeaderEpoch))
		b = append(b, 0)
	}
	if snapshot {
		b = append(b, 2, 8+4+1)
		b = binary.BigEndian.AppendUint64(b, uint64(sp.SnapshotID.EndOffset))
		b = binary.BigEndian.AppendUint32(b, uint32(sp.SnapshotID.Epoch))
		b = append(b, 0)
	}
	return b
}

// fetchArrayLen writes an array length: compact (length+1, unsigned varint) when
// flexible, else int32.
func fetchArrayLen(b []byte, n int, flex bool) []byte {
	if flex {
		return binary.AppendUvarint(b, uint64(n)+1)
	}
	return binary.BigEndian.AppendUint32(b, uint32(n))
}

// fetchBytesLen writes a bytes length; the same encoding as an array length.
func fetchBytesLen(b []byte, n int, flex bool) []byte { return fetchArrayLen(b, n, flex) }

// fetchNullLen writes the length of a null array or bytes: 0 compact, else int32 -1.
func fetchNullLen(b []byte, flex bool) []byte {
	if flex {
		return append(b, 0)
	}
	return binary.BigEndian.AppendUint32(b, 0xffffffff)
}

// fetchString writes a non-nullable string: compact when flexible, else int16 length.
func fetchString(b []byte, s string, flex bool) []byte {
	if flex {
		b = binary.AppendUvarint(b, uint64(len(s))+1)
	} else {
		b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	}
	return append(b, s...)
}

// Response is the answer's FetchResponse (replication.SessionAnswer).
func (a *fetchAnswer) Response() *kmsg.FetchResponse { return a.FetchResponse }

// DropPartitions releases every held range and drops every topic
// (replication.SessionAnswer).
func (a *fetchAnswer) DropPartitions() {
	a.Release()
	a.Topics, a.held = nil, nil
}

// Changes sums the partitions' Changes() as of the reads (replication.FetchRead).
func (a *fetchAnswer) Changes() uint64 { return a.changes }

// KeepPartitions drops, in place, the partitions keep refuses (given each one's index
// in response order and its record bytes), releasing their held record sets, and the
// topics left without partitions.
func (a *fetchAnswer) KeepPartitions(keep func(i int, sp *kmsg.FetchResponseTopicPartition, recordBytes int) bool) {
	i, w := 0, 0
	topics := a.Topics[:0]
	for ti := range a.Topics {
		t := a.Topics[ti]
		kept := t.Partitions[:0]
		for pi := range t.Partitions {
			sp := &t.Partitions[pi]
			h := a.heldAt(i)
			if keep(i, sp, a.recordBytes(i, sp)) {
				kept = append(kept, *sp)
				if i < len(a.held) {
					a.held[w] = h
				}
				w++
			} else {
				h.Release()
			}
			i++
		}
		if len(kept) > 0 {
			t.Partitions = kept
			topics = append(topics, t)
		}
	}
	a.Topics = topics
	if w < len(a.held) {
		clear(a.held[w:])
		a.held = a.held[:w]
	}
}

func (a *fetchAnswer) heldAt(i int) *segment.Hold {
	if i < len(a.held) {
		return a.held[i]
	}
	return nil
}

// reusable reports whether a parked fetch may answer with a at the end of its wait if
// nothing changes meanwhile (replication.DelayedFetch.Reusable): only an answer holding
// no records and not cut by a quota, which time alone changes.
func (a *fetchAnswer) reusable() bool {
	if a == nil || a.throttled || a.anyHeld() {
		return false
	}
	for _, t := range a.Topics {
		for _, p := range t.Partitions {
			if len(p.RecordBatches) > 0 {
				return false
			}
		}
	}
	return true
}
