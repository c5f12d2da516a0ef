package share

import "math"

// StateBatch is one state batch of the durable state: a range of offsets with their
// delivery state (Available, Acknowledged or Archived; never Acquired) and delivery
// count, Kafka's PersisterStateBatch and the StateBatches entries of the
// __share_group_state values.
type StateBatch struct {
	FirstOffset   int64
	LastOffset    int64
	DeliveryState RecordState
	DeliveryCount int16
}

// Change is what an operation changed in the durable state: the content of a
// WriteShareGroupState request from the partition leader to the share coordinator
// (Kafka's SharePartition.writeShareGroupState). StartOffset and
// DeliveryCompleteCount are the values after the operation; Batches holds the changed
// ranges at or after StartOffset, in offset order. An acquired record is written as
// Available with its incremented delivery count, so that a new leader knows how often
// it was delivered.
type Change struct {
	StartOffset           int64
	DeliveryCompleteCount int32
	Batches               []StateBatch
	moved                 bool // the SPSO moved
}

// Empty reports whether there is nothing to write.
func (c Change) Empty() bool { return !c.moved && len(c.Batches) == 0 }

// begin starts tracking the change of an operation.
func (p *Partition) begin() {
	p.dirtyLo, p.dirtyHi = math.MaxInt64, math.MinInt64
	p.startBefore = p.startOffset
}

// mark records that [first, last] changed.
func (p *Partition) mark(first, last int64) {
	p.dirtyLo = min(p.dirtyLo, first)
	p.dirtyHi = max(p.dirtyHi, last)
}

// finish normalises the runs and returns the operation's change.
func (p *Partition) finish() Change {
	p.normalize()
	c := Change{StartOffset: p.startOffset, moved: p.startOffset != p.startBefore}
	lo, hi := max(p.dirtyLo, p.startOffset), p.dirtyHi
	for _, r := range p.runs {
		if r.last < lo || r.first > hi {
			continue
		}
		c.Batches = appendBatch(c.Batches, r.stateBatch(max(r.first, lo), min(r.last, hi)))
	}
	if !c.Empty() {
		c.DeliveryCompleteCount = p.DeliveryCompleteCount()
	}
	p.begin()
	return c
}

// stateBatch is the durable form of [first, last] of r.
func (r run) stateBatch(first, last int64) StateBatch {
	s := r.state
	if s == Acquired {
		s = Available
	}
	return StateBatch{FirstOffset: first, LastOffset: last, DeliveryState: s, DeliveryCount: r.deliveryCount}
}

// Snapshot returns the whole durable state of the partition, as a ShareSnapshot would
// hold it: every in-flight range except Available records never delivered (a gap in the
// state batches means exactly that).
func (p *Partition) Snapshot() State {
	st := State{
		StateEpoch:            p.stateEpoch,
		LeaderEpoch:           p.leaderEpoch,
		StartOffset:           p.startOffset,
		DeliveryCompleteCount: p.DeliveryCompleteCount(),
	}
	for _, r := range p.runs {
		if r.state == Available && r.deliveryCount == 0 {
			continue
		}
		st.Batches = appendBatch(st.Batches, r.stateBatch(r.first, r.last))
	}
	return st
}

// appendBatch appends b, merging it into the last batch when they touch and agree.
func appendBatch(bs []StateBatch, b StateBatch) []StateBatch {
	if n := len(bs); n > 0 {
		l := &bs[n-1]
		if l.LastOffset+1 == b.FirstOffset && l.DeliveryState == b.DeliveryState && l.DeliveryCount == b.DeliveryCount {
			l.LastOffset = b.LastOffset
			return bs
		}
	}
	return append(bs, b)
}
