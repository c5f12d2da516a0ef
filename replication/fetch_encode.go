package replication

// The Fetch response as bytes plus file ranges: appendFetchParts writes exactly kmsg's
// encoding of FetchResponse v4-v17 with each RecordBatches replaced by its section
// (fetch_encode_test.go and FuzzFetchParts hold it to that): topic ids from v13, the
// v16 NodeEndpoints (Brokers) tag of KIP-951; a response carrying anything this
// encoder does not write (unknown tags) is encoded by kmsg with the records read in
// (FetchAnswer.AppendParts).

import (
	"encoding/binary"

	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchPartsEncodable reports whether appendFetchParts writes everything resp holds:
// versions 4-17, no unknown tags, Brokers only from v16.
func fetchPartsEncodable(r *kmsg.FetchResponse) bool {
	if r.Version < 4 || r.Version > 17 || r.UnknownTags.Len() > 0 || len(r.Brokers) > 0 && r.Version < 16 {
		return false
	}
	for _, br := range r.Brokers {
		if br.UnknownTags.Len() > 0 {
			return false
		}
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

// appendFetchParts encodes r (versions 4-17, fetchPartsEncodable) field by field in
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
		if v >= 13 {
			b = append(b, t.TopicID[:]...)
		} else {
			b = fetchString(b, t.Topic, flex)
		}
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
		b = appendResponseTags(b, r.Brokers)
	}
	p.B = b
}

// appendResponseTags writes a flexible response's tagged fields: NodeEndpoints (0,
// v16+) when there are any.
func appendResponseTags(b []byte, brokers []kmsg.FetchResponseBroker) []byte {
	if len(brokers) == 0 {
		return append(b, 0)
	}
	var body []byte
	body = fetchArrayLen(body, len(brokers), true)
	for _, br := range brokers {
		body = binary.BigEndian.AppendUint32(body, uint32(br.NodeID))
		body = fetchString(body, br.Host, true)
		body = binary.BigEndian.AppendUint32(body, uint32(br.Port))
		if br.Rack == nil {
			body = append(body, 0)
		} else {
			body = fetchString(body, *br.Rack, true)
		}
		body = append(body, 0) // the broker's tagged fields
	}
	b = append(b, 1, 0) // one tagged field, tag 0
	b = binary.AppendUvarint(b, uint64(len(body)))
	return append(b, body...)
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
