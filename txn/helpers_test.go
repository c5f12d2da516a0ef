package txn

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// harness plays the coordinator runtime around a Shard: it "writes" records to an
// in-memory log, answers Committed with writeCode, delivers replies and keeps the
// markers asked for.
type harness struct {
	t         *testing.T
	s         *Shard
	now       time.Time
	log       []Record
	writeCode int16
	hold      bool // park writes instead of completing them
	held      []Effects
	answered  map[int]bool // held writes answered by timeOut, by index
	markers   []*Markers
	nextPID   int64
}

func newHarness(t *testing.T) *harness {
	return &harness{t: t, s: NewShard(DefaultConfig(), 7), now: time.UnixMilli(1_700_000_000_000), nextPID: 1000}
}

func (h *harness) newPID() (int64, bool) { h.nextPID++; return h.nextPID, true }

func (h *harness) run(e Effects) {
	if len(e.Records) > 0 {
		if h.hold {
			h.held = append(h.held, e)
			return
		}
		h.log = append(h.log, e.Records...)
	}
	if len(e.Records) > 0 || e.Committed != nil {
		if e.Committed != nil {
			h.run(e.Committed(h.writeCode))
		}
	}
	for _, r := range e.Replies {
		r.Send(r.Response)
	}
	h.markers = append(h.markers, e.Markers...)
}

// timeOut answers the parked writes as the runtime does at the write timeout:
// TimedOut with COORDINATOR_NOT_AVAILABLE, then the replies and markers; they stay
// parked (release decides whether they landed).
func (h *harness) timeOut() {
	if h.answered == nil {
		h.answered = map[int]bool{}
	}
	for i, e := range h.held {
		if h.answered[i] {
			continue
		}
		h.answered[i] = true
		if e.TimedOut != nil {
			h.run(e.TimedOut(kerr.CoordinatorNotAvailable.Code))
		}
		for _, r := range e.Replies {
			r.Send(r.Response)
		}
		h.markers = append(h.markers, e.Markers...)
	}
}

// release completes the parked writes with code.
func (h *harness) release(code int16) {
	held, answered := h.held, h.answered
	h.held, h.hold, h.answered = nil, false, nil
	for i, e := range held {
		h.writeCode = code
		if answered[i] {
			h.log = append(h.log, e.Records...)
			h.run(e.Committed(code))
			continue
		}
		h.run(e)
	}
	h.writeCode = 0
}

// init sends InitProducerId for id and returns the response.
func (h *harness) init(id string, pid int64, epoch int16, timeoutMs int32) *kmsg.InitProducerIDResponse {
	h.t.Helper()
	r := kmsg.NewPtrInitProducerIDRequest()
	r.Version = 5
	r.TransactionalID, r.TransactionTimeoutMillis, r.ProducerID, r.ProducerEpoch = &id, timeoutMs, pid, epoch
	var got *kmsg.InitProducerIDResponse
	h.run(h.s.InitProducerID(h.now, r, h.newPID, func(resp kmsg.Response) { got = resp.(*kmsg.InitProducerIDResponse) }))
	if got == nil && !h.hold {
		h.t.Fatalf("InitProducerId %q: no response", id)
	}
	return got
}

func (h *harness) add(id string, pid int64, epoch int16, tps ...TopicPartition) int16 {
	code := int16(-1)
	h.run(h.s.AddPartitions(h.now, id, pid, epoch, tps, func(c int16) { code = c }))
	return code
}

func (h *harness) end(id string, pid int64, epoch int16, commit bool) int16 {
	code := int16(-1)
	h.run(h.s.EndTransaction(h.now, id, pid, epoch, commit, func(c int16) { code = c }))
	return code
}

// completeMarkers reports every asked-for marker as written.
func (h *harness) completeMarkers() {
	for len(h.markers) > 0 {
		m := h.markers[0]
		h.markers = h.markers[1:]
		h.run(m.Done(h.now))
	}
}

func (h *harness) state(id string) Transaction {
	h.t.Helper()
	t, ok := h.s.Transaction(id)
	if !ok {
		h.t.Fatalf("transactional id %q unknown", id)
	}
	return t
}

// replayed returns a new shard that replayed everything h wrote.
func (h *harness) replayed() *Shard {
	h.t.Helper()
	s := NewShard(DefaultConfig(), 8)
	for _, r := range h.log {
		if err := s.Replay(r.Key, r.Value); err != nil {
			h.t.Fatalf("replay: %v", err)
		}
	}
	return s
}
