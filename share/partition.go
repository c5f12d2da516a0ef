package share

import (
	"fmt"
	"sort"
)

// RecordState is the state of an in-flight record, Kafka's
// org.apache.kafka.server.share.fetch.RecordState. The values are the delivery-state
// byte of __share_group_state's state batches, which never hold Acquired (an acquired
// record is written as Available with its delivery count).
type RecordState int8

const (
	// Available records may be acquired by the next ShareFetch.
	Available RecordState = 0
	// Acquired records are locked to one member until acknowledged, released or the
	// lock expires.
	Acquired RecordState = 1
	// Acknowledged records were accepted (ACCEPT); they are never delivered again.
	Acknowledged RecordState = 2
	// Archived records were rejected, hit the delivery-count limit, belong to an
	// aborted transaction or are gaps; they are never delivered again.
	Archived RecordState = 4
)

// terminal reports whether a record in state s is finished (Kafka's isStateTerminal).
func (s RecordState) terminal() bool { return s == Acknowledged || s == Archived }

// String gives Kafka's names.
func (s RecordState) String() string {
	switch s {
	case Available:
		return "AVAILABLE"
	case Acquired:
		return "ACQUIRED"
	case Acknowledged:
		return "ACKNOWLEDGED"
	case Archived:
		return "ARCHIVED"
	}
	return fmt.Sprintf("RecordState(%d)", int8(s))
}

// Key names a share partition: the fields of the ShareSnapshotKey and ShareUpdateKey
// records.
type Key struct {
	GroupID   string
	TopicID   [16]byte
	Partition int32
}

// run is a range of consecutive in-flight offsets in the same state: Kafka's
// InFlightBatch (batch state) and InFlightState (per offset state) in one shape. Runs
// split when part of them changes and merge again when neighbours become equal.
type run struct {
	first, last   int64
	state         RecordState
	deliveryCount int16
	member        string // the acquiring member; "" unless Acquired
	deadlineMs    int64  // acquisition lock deadline; 0 unless Acquired
}

func (r run) len() int64 { return r.last - r.first + 1 }

// sameAs reports whether r and o differ only in their offsets.
func (r run) sameAs(o run) bool {
	return r.state == o.state && r.deliveryCount == o.deliveryCount && r.member == o.member && r.deadlineMs == o.deadlineMs
}

// Partition is one share partition on its partition leader, Kafka's
// kafka.server.share.SharePartition: the share-partition start offset (SPSO), the
// in-flight records from it to the end offset (SPEO), their states, delivery counts
// and acquisition locks. Not safe for concurrent use: the caller serialises calls.
type Partition struct {
	key         Key
	cfg         Config
	leaderEpoch int32
	stateEpoch  int32

	// startOffset is the SPSO: every record before it is finished.
	startOffset int64
	// runs cover [startOffset, endOffset] without holes, in offset order; empty when
	// nothing is in flight (runs[0].first == startOffset otherwise).
	runs []run

	// The change being built by the current operation (change.go).
	dirtyLo, dirtyHi int64
	startBefore      int64
}

// NewPartition starts a share partition with nothing in flight at startOffset: the
// offset share.auto.offset.reset resolved to (latest: the high watermark, earliest: the
// log start offset, by_duration: the offset for now minus the duration), or the start
// offset an AlterShareGroupOffsets set.
func NewPartition(key Key, cfg Config, startOffset int64, leaderEpoch int32) *Partition {
	p := &Partition{key: key, cfg: cfg.withDefaults(), leaderEpoch: leaderEpoch, startOffset: startOffset}
	p.begin()
	return p
}

// Key returns the share partition's key.
func (p *Partition) Key() Key { return p.key }

// LeaderEpoch is the partition leader epoch the share partition was created or loaded
// in, the one to pass to StateLog.Write.
func (p *Partition) LeaderEpoch() int32 { return p.leaderEpoch }

// StartOffset is the share-partition start offset (SPSO).
func (p *Partition) StartOffset() int64 { return p.startOffset }

// EndOffset is the share-partition end offset (SPEO): the last in-flight offset, or
// the start offset when nothing is in flight (as Kafka's endOffset).
func (p *Partition) EndOffset() int64 {
	if len(p.runs) == 0 {
		return p.startOffset
	}
	return p.runs[len(p.runs)-1].last
}

// nextOffset is the first offset past the in-flight window.
func (p *Partition) nextOffset() int64 {
	if len(p.runs) == 0 {
		return p.startOffset
	}
	return p.runs[len(p.runs)-1].last + 1
}

// InFlightRecords is the size of the in-flight window, SPEO - SPSO + 1 (0 when empty),
// the count group.share.partition.max.record.locks limits (Kafka's numInFlightRecords).
func (p *Partition) InFlightRecords() int64 {
	if len(p.runs) == 0 {
		return 0
	}
	return p.EndOffset() - p.startOffset + 1
}

// NextFetchOffset is where the next log read for this share partition starts: the
// first Available in-flight record, or the offset after the window (Kafka's
// nextFetchOffset).
func (p *Partition) NextFetchOffset() int64 {
	for _, r := range p.runs {
		if r.state == Available {
			return r.first
		}
	}
	return p.nextOffset()
}

// CanAcquire reports whether a fetch could acquire anything: there is an Available
// record in the window, or the window is below the record-lock limit (Kafka's
// canAcquireRecords).
func (p *Partition) CanAcquire() bool {
	if p.NextFetchOffset() != p.nextOffset() {
		return true
	}
	return p.InFlightRecords() < p.cfg.MaxRecordLocks
}

// DeliveryCompleteCount is the number of finished (Acknowledged or Archived) records at
// or after the SPSO (KIP-1226), used for the share group lag.
func (p *Partition) DeliveryCompleteCount() int32 {
	var n int64
	for _, r := range p.runs {
		if r.state.terminal() {
			n += r.len()
		}
	}
	return int32(n)
}

// InFlight is one range of in-flight records in the same state, for describing and
// testing a Partition.
type InFlight struct {
	FirstOffset   int64
	LastOffset    int64
	State         RecordState
	DeliveryCount int16
	MemberID      string // the acquiring member, "" unless Acquired
	DeadlineMs    int64  // the lock deadline, 0 unless Acquired
}

// InFlight returns the in-flight records, in offset order.
func (p *Partition) InFlight() []InFlight {
	out := make([]InFlight, len(p.runs))
	for i, r := range p.runs {
		out[i] = InFlight{r.first, r.last, r.state, r.deliveryCount, r.member, r.deadlineMs}
	}
	return out
}

// find returns the index of the run holding offset o, or -1.
func (p *Partition) find(o int64) int {
	i := sort.Search(len(p.runs), func(i int) bool { return p.runs[i].last >= o })
	if i == len(p.runs) || p.runs[i].first > o {
		return -1
	}
	return i
}

// splitAt makes offset o the first offset of a run, if a run holds it.
func (p *Partition) splitAt(o int64) {
	i := p.find(o)
	if i < 0 || p.runs[i].first == o {
		return
	}
	left, right := p.runs[i], p.runs[i]
	left.last, right.first = o-1, o
	p.runs = append(p.runs, run{})
	copy(p.runs[i+2:], p.runs[i+1:])
	p.runs[i], p.runs[i+1] = left, right
}

// span splits the runs so that [first, last] (clipped to the window) is covered by
// whole runs, and returns their index range [i, j).
func (p *Partition) span(first, last int64) (int, int) {
	first = max(first, p.startOffset)
	last = min(last, p.EndOffset())
	if len(p.runs) == 0 || first > last {
		return 0, 0
	}
	p.splitAt(first)
	p.splitAt(last + 1)
	i := p.find(first)
	j := p.find(last) + 1
	return i, j
}

// appendRun adds records past the window; r.first must be nextOffset, or anything at or
// after the SPSO when the window is empty (the SPSO then moves to it).
func (p *Partition) appendRun(r run) {
	if len(p.runs) == 0 {
		p.startOffset = r.first
	}
	p.runs = append(p.runs, r)
	p.mark(r.first, r.last)
}

// normalize merges equal neighbours and moves the SPSO past the finished prefix
// (Kafka's maybeUpdateCachedStateAndOffsets).
func (p *Partition) normalize() {
	out := p.runs[:0]
	for _, r := range p.runs {
		if n := len(out); n > 0 && out[n-1].sameAs(r) {
			out[n-1].last = r.last
			continue
		}
		out = append(out, r)
	}
	p.runs = out
	k := 0
	for k < len(p.runs) && p.runs[k].state.terminal() {
		k++
	}
	if k > 0 {
		p.startOffset = p.runs[k-1].last + 1
		p.runs = append(p.runs[:0], p.runs[k:]...)
	}
}

// lockDeadline is the deadline of a lock taken at nowMs.
func (p *Partition) lockDeadline(nowMs int64) int64 { return nowMs + p.cfg.RecordLockDurationMs }

// releaseState is where a record that leaves Acquired without being acknowledged goes:
// Archived once delivered DeliveryCountLimit times, else Available (Kafka's
// InFlightState.tryUpdateState).
func (p *Partition) releaseState(deliveryCount int16) RecordState {
	if deliveryCount >= p.cfg.DeliveryCountLimit {
		return Archived
	}
	return Available
}
