package replication

import (
	"github.com/petrel-broker/petrel/rpc"
	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FetchAnswer is a Fetch response whose record sets are held file ranges (issue #13
// item 1): the record sets stay in the segment files, pinned by segment.Hold, and the
// rpc writer sends them by sendfile between the encoded bytes (rpc.PartsResponse,
// fetch_encode.go). held has one entry per partition in response order (topic by
// topic), nil where the records are the partition's RecordBatches.
type FetchAnswer struct {
	*kmsg.FetchResponse
	held []*segment.Hold
	// changes sums the partitions' Changes() as of the reads (fetch_read.go, ParkFetch).
	changes uint64
	// throttled: a partition's records were left out by a replication quota, which
	// time alone lifts (throttle.go).
	throttled bool
	// behind: a partition's read came from a segment older than the one holding its
	// high watermark (Kafka's DelayedFetch: "the fetch is falling behind the current
	// segment"), so the fetch answers at once, whatever min_bytes says; also set when
	// a partition sends the consumer to another replica (KIP-392, read_replica.go).
	behind bool
	// marks has, for a follower's fetch, one entry per partition in response order:
	// what a follower session's watch learns of the read (fetch_session_watch.go).
	marks []readMark
	// remote is the partition to read from remote storage before answering
	// (fetch_remote.go); nil when none.
	remote *pendingRemote
}

// readMark is what one partition's read in a follower's fetch tells its session: the
// local replica read (nil: none, an error), its Changes() as of the read, and whether
// the read found the follower idle at the log end (no error, no records, no
// divergence, nothing left out), so that the session need not read it again until
// it changes.
type readMark struct {
	lp      *Partition
	changes uint64
	idle    bool
}

var (
	_ rpc.PartsResponse = (*FetchAnswer)(nil)
	_ FetchRead         = (*FetchAnswer)(nil)
	_ SessionAnswer     = (*FetchAnswer)(nil)
)

// FetchResponseOf is the FetchResponse of a Fetch handler's answer: a *FetchAnswer
// (held record sets) or a plain *kmsg.FetchResponse. Code that edits a Fetch response
// after the handler (authorization, quotas) goes through it.
func FetchResponseOf(resp kmsg.Response) *kmsg.FetchResponse {
	if a, ok := resp.(*FetchAnswer); ok {
		return a.FetchResponse
	}
	return resp.(*kmsg.FetchResponse)
}

// Release lets go of every held range; a nil answer has none.
func (a *FetchAnswer) Release() {
	if a == nil {
		return
	}
	for i, h := range a.held {
		h.Release()
		a.held[i] = nil
	}
}

// RecordBytes is the size of the record set of the i-th partition, p, in response
// order.
func (a *FetchAnswer) RecordBytes(i int, p *kmsg.FetchResponseTopicPartition) int {
	if i < len(a.held) && a.held[i] != nil {
		return int(a.held[i].Len())
	}
	return len(p.RecordBatches)
}

// HeldBytes is the size of the record sets held in the segment files.
func (a *FetchAnswer) HeldBytes() int64 {
	var n int64
	for _, h := range a.held {
		n += h.Len()
	}
	return n
}

// Held is the i-th partition's held record set in response order, or nil.
func (a *FetchAnswer) Held(i int) *segment.Hold {
	if i < len(a.held) {
		return a.held[i]
	}
	return nil
}

// section is the i-th partition's held range as an rpc.FileSection (Size 0: none).
func (a *FetchAnswer) section(i int) rpc.FileSection {
	if i >= len(a.held) || a.held[i] == nil {
		return rpc.FileSection{}
	}
	h := a.held[i]
	return rpc.FileSection{File: h.File, Offset: h.Position, Size: h.Size}
}

// AppendParts encodes the response body at its version, sections in place of the
// held record sets.
func (a *FetchAnswer) AppendParts(p *rpc.Parts) {
	if !fetchPartsEncodable(a.FetchResponse) {
		p.B = a.AppendTo(p.B)
		return
	}
	appendFetchParts(p, a.FetchResponse, a.section)
}

// AppendTo is kmsg's encoding with the held ranges read in: the copying path, for a
// response that must be encoded whole.
func (a *FetchAnswer) AppendTo(dst []byte) []byte {
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

func (a *FetchAnswer) anyHeld() bool {
	for _, h := range a.held {
		if h != nil {
			return true
		}
	}
	return false
}

// Response is the answer's FetchResponse (SessionAnswer).
func (a *FetchAnswer) Response() *kmsg.FetchResponse { return a.FetchResponse }

// DropPartitions releases every held range and drops every topic (SessionAnswer).
func (a *FetchAnswer) DropPartitions() {
	a.Release()
	a.Topics, a.held = nil, nil
}

// Changes sums the partitions' Changes() as of the reads (FetchRead).
func (a *FetchAnswer) Changes() uint64 { return a.changes }

// KeepPartitions drops, in place, the partitions keep refuses (given each one's index
// in response order and its record bytes), releasing their held record sets, and the
// topics left without partitions (SessionAnswer).
func (a *FetchAnswer) KeepPartitions(keep func(i int, sp *kmsg.FetchResponseTopicPartition, recordBytes int) bool) {
	i, w := 0, 0
	topics := a.Topics[:0]
	for ti := range a.Topics {
		t := a.Topics[ti]
		kept := t.Partitions[:0]
		for pi := range t.Partitions {
			sp := &t.Partitions[pi]
			h := a.Held(i)
			if keep(i, sp, a.RecordBytes(i, sp)) {
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

// reusable reports whether a parked fetch may answer with a at the end of its wait if
// nothing changes meanwhile (DelayedFetch.Reusable): only an answer holding no
// records, not cut by a quota, which time alone changes, and with no remote read to
// make.
func (a *FetchAnswer) reusable() bool {
	if a == nil || a.throttled || a.remote != nil || a.anyHeld() {
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
