package txn

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// An EndTxn whose PrepareCommit timed out is answered COORDINATOR_NOT_AVAILABLE, keeps
// the transaction pending (CONCURRENT_TRANSACTIONS meanwhile), and once the record
// lands the transaction is prepared and its markers are written, as a load would
// resume it; the retried EndTxn then succeeds.
func TestTimedOutPrepareAppliedWhenItLands(t *testing.T) {
	h := newHarness(t)
	r := h.init("t", -1, -1, 60000)
	pid, epoch := r.ProducerID, r.ProducerEpoch
	h.add("t", pid, epoch, tpA)
	h.hold = true
	h.end("t", pid, epoch, true)
	h.timeOut()
	h.hold = false
	if c := h.end("t", pid, epoch, true); c != kerr.ConcurrentTransactions.Code {
		t.Fatalf("retried EndTxn while the write is pending: %d", c)
	}
	if len(h.markers) != 0 {
		t.Fatalf("markers before the prepare landed: %d", len(h.markers))
	}
	h.release(0)
	if got := h.state("t"); got.State != StatePrepareCommit {
		t.Fatalf("after landing: %v", got.State)
	}
	if len(h.markers) != 1 || !h.markers[0].Commit {
		t.Fatalf("markers after landing: %+v", h.markers)
	}
	h.completeMarkers()
	if got := h.state("t"); got.State != StateCompleteCommit {
		t.Fatalf("after markers: %v", got.State)
	}
	if c := h.end("t", pid, epoch, true); c != 0 {
		t.Fatalf("retried EndTxn: %d", c)
	}
	if got := h.replayed().txns["t"]; got.State != StateCompleteCommit {
		t.Fatalf("replayed: %v", got.State)
	}
}

// The EndTxn's answer on a timeout.
func TestTimedOutWriteAnswersCoordinatorNotAvailable(t *testing.T) {
	h := newHarness(t)
	r := h.init("t", -1, -1, 60000)
	h.add("t", r.ProducerID, r.ProducerEpoch, tpA)
	h.hold = true
	code := int16(-1)
	h.run(h.s.EndTransaction(h.now, "t", r.ProducerID, r.ProducerEpoch, false, func(c int16) { code = c }))
	h.timeOut()
	if code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("EndTxn answered %d at the timeout", code)
	}
	h.release(0)
	if code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("answered again: %d", code)
	}
	if got := h.state("t"); got.State != StatePrepareAbort {
		t.Fatalf("after landing: %v", got.State)
	}
}

// A write that failed to append leaves the previous state, live and replayed.
func TestFailedWriteAppliedNowhere(t *testing.T) {
	h := newHarness(t)
	r := h.init("t", -1, -1, 60000)
	h.writeCode = kerr.CoordinatorNotAvailable.Code
	if c := h.add("t", r.ProducerID, r.ProducerEpoch, tpA); c != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("add: %d", c)
	}
	h.log = h.log[:len(h.log)-1] // the failed append is not in the log
	h.writeCode = 0
	if got := h.state("t"); got.State != StateEmpty {
		t.Fatalf("live: %v", got.State)
	}
	if got := h.replayed().txns["t"]; got.State != StateEmpty {
		t.Fatalf("replayed: %v", got.State)
	}
}

// An AddPartitions waiting behind a write that times out is answered then
// (CONCURRENT_TRANSACTIONS, which the producer retries), and so is one arriving after.
func TestQueuedAddAnsweredAtTheTimeout(t *testing.T) {
	h := newHarness(t)
	r := h.init("t", -1, -1, 60000)
	pid, epoch := r.ProducerID, r.ProducerEpoch
	h.hold = true
	first := h.add("t", pid, epoch, tpA)
	second := int16(-1)
	h.run(h.s.AddPartitions(h.now, "t", pid, epoch, []TopicPartition{tpB}, func(c int16) { second = c }))
	if first != -1 || second != -1 {
		t.Fatalf("answered before the timeout: %d %d", first, second)
	}
	h.timeOut()
	if second != kerr.ConcurrentTransactions.Code {
		t.Fatalf("queued add answered %d at the timeout", second)
	}
	if c := h.add("t", pid, epoch, tpB); c != kerr.ConcurrentTransactions.Code {
		t.Fatalf("add while the timed-out write is pending: %d", c)
	}
	h.release(0)
	if got := h.state("t"); got.State != StateOngoing || len(got.Partitions) != 1 {
		t.Fatalf("after landing: %+v", got)
	}
	if c := h.add("t", pid, epoch, tpB); c != 0 {
		t.Fatalf("add after landing: %d", c)
	}
}

// A CompleteCommit write that times out asks for no markers again: it is pending and
// either lands (the transaction is complete) or the partition is unloaded (the next
// load resumes the prepared transaction). Markers asked for again would be in flight
// after the completion lands, and the producer's next transaction, at the same epoch,
// could take a late COMMIT marker of the previous one.
func TestTimedOutCompleteAsksForNoMarkersAgain(t *testing.T) {
	h := newHarness(t)
	r := h.init("t", -1, -1, 60000)
	pid, epoch := r.ProducerID, r.ProducerEpoch
	h.add("t", pid, epoch, tpA)
	if c := h.end("t", pid, epoch, true); c != 0 {
		t.Fatalf("EndTxn: %d", c)
	}
	if len(h.markers) != 1 || h.markers[0].Backoff != 0 {
		t.Fatalf("markers after the prepare: %+v", h.markers)
	}
	h.hold = true
	h.completeMarkers() // the CompleteCommit write is held
	h.timeOut()
	if len(h.markers) != 0 {
		t.Fatalf("markers asked for again while CompleteCommit is pending: %+v", h.markers)
	}
	if c := h.end("t", pid, epoch, true); c != kerr.ConcurrentTransactions.Code {
		t.Fatalf("retried EndTxn while CompleteCommit is pending: %d", c)
	}
	h.release(0)
	if got := h.state("t"); got.State != StateCompleteCommit {
		t.Fatalf("after landing: %v", got.State)
	}
	if len(h.markers) != 0 {
		t.Fatalf("markers after CompleteCommit landed: %+v", h.markers)
	}
	if c := h.add("t", pid, epoch, tpB); c != 0 {
		t.Fatalf("the next transaction: %d", c)
	}
}

// A CompleteCommit write whose append fails (it is not in the log) asks for the markers
// again, and the retry completes the transaction.
func TestFailedCompleteAsksForMarkersAgain(t *testing.T) {
	h := newHarness(t)
	r := h.init("t", -1, -1, 60000)
	pid, epoch := r.ProducerID, r.ProducerEpoch
	h.add("t", pid, epoch, tpA)
	h.end("t", pid, epoch, true)
	h.writeCode = kerr.CoordinatorNotAvailable.Code
	m := h.markers[0]
	h.markers = h.markers[1:]
	h.run(m.Done(h.now))
	h.log = h.log[:len(h.log)-1] // the failed append is not in the log
	h.writeCode = 0
	if len(h.markers) != 1 {
		t.Fatalf("markers after the failed CompleteCommit: %d", len(h.markers))
	}
	// Not at once: while the partition refuses writes, each round would append
	// another marker to every partition of the transaction.
	if h.markers[0].Backoff <= 0 {
		t.Fatalf("markers asked for again without a backoff")
	}
	h.completeMarkers()
	if got := h.state("t"); got.State != StateCompleteCommit {
		t.Fatalf("after the retry: %v", got.State)
	}
}
