package share

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// chooser makes the simulation's choices: a seeded generator for the property test,
// fuzz bytes for the fuzz test.
type chooser interface{ intn(n int) int }

type randChooser struct{ r *rand.Rand }

func (c randChooser) intn(n int) int { return c.r.IntN(n) }

// byteChooser reads choices from fuzz input; exhausted input chooses 0.
type byteChooser struct{ b []byte }

func (c *byteChooser) intn(n int) int {
	if len(c.b) == 0 || n <= 1 {
		return 0
	}
	v := int(c.b[0])
	c.b = c.b[1:]
	return v % n
}

func (c *byteChooser) exhausted() bool { return len(c.b) == 0 }

// logBatch is one batch of the simulated log; hole batches were compacted away.
type logBatch struct {
	FetchedBatch
	hole bool
	// markerOffset is the offset of a transactional batch's commit or abort marker.
	markerOffset int64
	aborted      bool
}

// simLog is a partition's log: batches over [0, end).
type simLog struct {
	batches []logBatch
	aborted []AbortedTransaction
	end     int64
}

// newSimLog builds a log of about n offsets: plain batches, transactions (each its own
// producer, one batch and a marker, committed or aborted) and compacted holes.
func newSimLog(c chooser, n int64) *simLog {
	l := &simLog{}
	pid := int64(1000)
	for l.end < n {
		size := int64(1 + c.intn(6))
		b := logBatch{FetchedBatch: FetchedBatch{BaseOffset: l.end, LastOffset: l.end + size - 1, ProducerID: -1}}
		switch k := c.intn(10); {
		case k < 6:
		case k < 8:
			pid++
			b.ProducerID, b.Transactional = pid, true
			b.aborted = c.intn(2) == 0
			b.markerOffset = b.LastOffset + 1
			l.batches = append(l.batches, b)
			marker := logBatch{FetchedBatch: FetchedBatch{BaseOffset: b.markerOffset, LastOffset: b.markerOffset, ProducerID: pid, Transactional: true, Control: true}}
			l.batches = append(l.batches, marker)
			if b.aborted {
				l.aborted = append(l.aborted, AbortedTransaction{ProducerID: pid, FirstOffset: b.BaseOffset})
			}
			l.end = b.markerOffset + 1
			continue
		default:
			b.hole = true
		}
		l.batches = append(l.batches, b)
		l.end = b.LastOffset + 1
	}
	return l
}

// read returns up to maxBatches batches from the one holding fetchOffset on, and the
// aborted transactions a Fetch would list with them.
func (l *simLog) read(fetchOffset int64, maxBatches int) ([]FetchedBatch, []AbortedTransaction) {
	var out []FetchedBatch
	for _, b := range l.batches {
		if b.hole || b.LastOffset < fetchOffset {
			continue
		}
		if len(out) == maxBatches {
			break
		}
		out = append(out, b.FetchedBatch)
	}
	if len(out) == 0 {
		return nil, nil
	}
	last := out[len(out)-1].LastOffset
	var ab []AbortedTransaction
	for _, b := range l.batches {
		if b.aborted && b.BaseOffset <= last && b.markerOffset >= fetchOffset {
			ab = append(ab, AbortedTransaction{ProducerID: b.ProducerID, FirstOffset: b.BaseOffset})
		}
	}
	return out, ab
}

// deliverable reports whether offset o holds a record an application may receive
// under read_committed.
func (l *simLog) deliverable(o int64) bool {
	for _, b := range l.batches {
		if o >= b.BaseOffset && o <= b.LastOffset {
			return !b.hole && !b.Control && !b.aborted
		}
	}
	return false
}

// durable is a record as a new leader would see it: done (finished, or before the
// SPSO), or Available with a delivery count.
type durable struct {
	done  bool
	count int16
}

// durableView is p's durable view of [from, to].
func durableView(p *Partition, from, to int64) []durable {
	out := make([]durable, 0, to-from+1)
	for o := from; o <= to; o++ {
		d := durable{}
		if o < p.StartOffset() {
			d.done = true
		} else if i := p.find(o); i >= 0 {
			r := p.runs[i]
			d.count = r.deliveryCount
			d.done = r.state.terminal() || (r.state != Available && p.releaseState(r.deliveryCount) == Archived) ||
				(r.state == Available && r.deliveryCount >= p.cfg.DeliveryCountLimit)
		}
		if d.done {
			d.count = 0
		}
		out = append(out, d)
	}
	return out
}

// checkRuns checks the representation invariants of p.
func checkRuns(p *Partition) error {
	next := p.startOffset
	for i, r := range p.runs {
		if r.first != next || r.last < r.first {
			return fmt.Errorf("run %d is %d-%d, expected to start at %d", i, r.first, r.last, next)
		}
		if (r.state == Acquired) != (r.member != "") {
			return fmt.Errorf("run %d-%d in %s has member %q", r.first, r.last, r.state, r.member)
		}
		if i > 0 && p.runs[i-1].sameAs(r) {
			return fmt.Errorf("runs %d and %d are not merged", i-1, i)
		}
		next = r.last + 1
	}
	if len(p.runs) > 0 && p.runs[0].state.terminal() {
		return fmt.Errorf("SPSO %d is at a finished record", p.startOffset)
	}
	return nil
}

func errKind(err error) string {
	switch {
	case err == nil:
		return "nil"
	case errors.Is(err, ErrInvalidRequest):
		return "INVALID_REQUEST"
	case errors.Is(err, ErrInvalidRecordState):
		return "INVALID_RECORD_STATE"
	}
	return err.Error()
}

func acquire1(t *testing.T, p *Partition, now int64, member string, fetch int64, max int, mode AcquireMode, bs ...FetchedBatch) []AcquiredRecords {
	t.Helper()
	got, _ := p.Acquire(now, AcquireRequest{MemberID: member, FetchOffset: fetch, Batches: bs, MaxRecords: max, Mode: mode})
	return got
}

func plain(base, last int64) FetchedBatch {
	return FetchedBatch{BaseOffset: base, LastOffset: last, ProducerID: -1}
}

func ack(first, last int64, types ...AcknowledgeType) AcknowledgementBatch {
	return AcknowledgementBatch{FirstOffset: first, LastOffset: last, AcknowledgeTypes: slices.Clone(types)}
}
