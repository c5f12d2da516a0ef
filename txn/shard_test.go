package txn

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

var tpA, tpB = TopicPartition{"a", 0}, TopicPartition{"b", 3}

func TestInitProducerIDNewAndBump(t *testing.T) {
	h := newHarness(t)
	r := h.init("t1", -1, -1, 60000)
	if r.ErrorCode != 0 || r.ProducerID != 1001 || r.ProducerEpoch != 0 {
		t.Fatalf("first init: %+v", r)
	}
	r = h.init("t1", -1, -1, 60000)
	if r.ErrorCode != 0 || r.ProducerID != 1001 || r.ProducerEpoch != 1 {
		t.Fatalf("second init: %+v", r)
	}
	// KIP-360: the current epoch bumps; the previous epoch (a retry) gets the same
	// answer; anything else is fenced.
	if r = h.init("t1", 1001, 1, 60000); r.ErrorCode != 0 || r.ProducerEpoch != 2 {
		t.Fatalf("init with current epoch: %+v", r)
	}
	if r = h.init("t1", 1001, 1, 60000); r.ErrorCode != 0 || r.ProducerEpoch != 2 {
		t.Fatalf("retried init: %+v", r)
	}
	if r = h.init("t1", 1001, 0, 60000); r.ErrorCode != kerr.ProducerFenced.Code {
		t.Fatalf("init with a stale epoch: %+v", r)
	}
	if r = h.init("t1", 999, 2, 60000); r.ErrorCode != kerr.ProducerFenced.Code {
		t.Fatalf("init with another producer id: %+v", r)
	}
	got := h.replayed().txns["t1"]
	if got.ProducerID != 1001 || got.ProducerEpoch != 2 || got.State != StateEmpty || got.Timeout != time.Minute {
		t.Fatalf("replayed: %+v", got)
	}
}

func TestInitProducerIDBadInput(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		id      string
		timeout int32
		want    int16
	}{
		{"", 1000, kerr.InvalidRequest.Code},
		{"t", 0, kerr.InvalidTransactionTimeout.Code},
		{"t", 900001, kerr.InvalidTransactionTimeout.Code},
	} {
		if r := h.init(tc.id, -1, -1, tc.timeout); r.ErrorCode != tc.want {
			t.Errorf("init(%q, %d) = %d, want %d", tc.id, tc.timeout, r.ErrorCode, tc.want)
		}
	}
	if _, ok := h.s.Transaction("t"); ok {
		t.Fatal("a refused init created the id")
	}
}

func TestInitProducerIDExhaustedEpochRotates(t *testing.T) {
	h := newHarness(t)
	h.init("t", -1, -1, 1000)
	h.s.txns["t"].ProducerEpoch = 1<<15 - 2
	r := h.init("t", -1, -1, 1000)
	if r.ErrorCode != 0 || r.ProducerID != 1002 || r.ProducerEpoch != 0 {
		t.Fatalf("rotation: %+v", r)
	}
	// The old producer retrying with its exhausted epoch is recognised (KIP-360).
	if got := h.state("t"); got.LastProducerID != 1001 {
		t.Fatalf("last producer id %d", got.LastProducerID)
	}
}

func TestConcurrentInitWhileWriting(t *testing.T) {
	h := newHarness(t)
	h.init("t", -1, -1, 1000)
	h.hold = true
	h.init("t", -1, -1, 1000)
	h.hold = false
	if r := h.init("t", -1, -1, 1000); r.ErrorCode != kerr.ConcurrentTransactions.Code {
		t.Fatalf("init during a write: %+v", r)
	}
	h.hold = true
	h.release(kerr.NotCoordinator.Code)
	if got := h.state("t"); got.ProducerEpoch != 0 {
		t.Fatalf("a failed write changed the state: epoch %d", got.ProducerEpoch)
	}
}

func TestCommitAndAbortCycle(t *testing.T) {
	h := newHarness(t)
	r := h.init("t", -1, -1, 60000)
	pid, epoch := r.ProducerID, r.ProducerEpoch
	if code := h.end("t", pid, epoch, true); code != kerr.InvalidTxnState.Code {
		t.Fatalf("EndTxn without a transaction: %d", code)
	}
	if code := h.add("t", pid, epoch, tpA, tpB); code != 0 {
		t.Fatalf("add: %d", code)
	}
	if got := h.state("t"); got.State != StateOngoing || len(got.Partitions) != 2 {
		t.Fatalf("after add: %+v", got)
	}
	writes := len(h.log)
	if code := h.add("t", pid, epoch, tpA); code != 0 || len(h.log) != writes {
		t.Fatalf("adding a partition again: code %d, %d writes", code, len(h.log)-writes)
	}
	if code := h.end("t", pid, epoch, true); code != 0 {
		t.Fatalf("commit: %d", code)
	}
	if got := h.state("t"); got.State != StatePrepareCommit {
		t.Fatalf("after EndTxn: %v", got.State)
	}
	if len(h.markers) != 1 || !h.markers[0].Commit || len(h.markers[0].Partitions) != 2 || h.markers[0].CoordinatorEpoch != 7 {
		t.Fatalf("markers: %+v", h.markers)
	}
	// Until the markers are written, the producer waits.
	if code := h.add("t", pid, epoch, tpA); code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("add while committing: %d", code)
	}
	h.completeMarkers()
	if got := h.state("t"); got.State != StateCompleteCommit || len(got.Partitions) != 0 {
		t.Fatalf("after markers: %+v", got)
	}
	if code := h.end("t", pid, epoch, true); code != 0 {
		t.Fatalf("retried commit: %d", code)
	}
	if code := h.end("t", pid, epoch, false); code != kerr.InvalidTxnState.Code {
		t.Fatalf("abort after commit: %d", code)
	}
	h.add("t", pid, epoch, tpB)
	if code := h.end("t", pid, epoch, false); code != 0 {
		t.Fatalf("abort: %d", code)
	}
	h.completeMarkers()
	if got := h.replayed().txns["t"]; got.State != StateCompleteAbort {
		t.Fatalf("replayed: %v", got.State)
	}
}

func TestProducerChecks(t *testing.T) {
	h := newHarness(t)
	r := h.init("t", -1, -1, 60000)
	pid, epoch := r.ProducerID, r.ProducerEpoch
	for _, tc := range []struct {
		name  string
		id    string
		pid   int64
		epoch int16
		want  int16
	}{
		{"unknown id", "nope", pid, epoch, kerr.InvalidProducerIDMapping.Code},
		{"other producer id", "t", pid + 1, epoch, kerr.InvalidProducerIDMapping.Code},
		{"stale epoch", "t", pid, epoch - 1, kerr.ProducerFenced.Code},
	} {
		if code := h.add(tc.id, tc.pid, tc.epoch, tpA); code != tc.want {
			t.Errorf("%s: add = %d, want %d", tc.name, code, tc.want)
		}
		if code := h.end(tc.id, tc.pid, tc.epoch, true); code != tc.want {
			t.Errorf("%s: end = %d, want %d", tc.name, code, tc.want)
		}
	}
}

func TestFencingAbortsOpenTransaction(t *testing.T) {
	h := newHarness(t)
	r := h.init("t", -1, -1, 60000)
	pid, epoch := r.ProducerID, r.ProducerEpoch
	h.add("t", pid, epoch, tpA)
	// A second producer with the same id: the open transaction is aborted with a
	// bumped epoch and the newcomer retries.
	if r := h.init("t", -1, -1, 60000); r.ErrorCode != kerr.ConcurrentTransactions.Code {
		t.Fatalf("init over an open transaction: %+v", r)
	}
	if len(h.markers) != 1 || h.markers[0].Commit || h.markers[0].ProducerEpoch != epoch+1 {
		t.Fatalf("markers: %+v", h.markers)
	}
	if code := h.end("t", pid, epoch, true); code != kerr.ProducerFenced.Code {
		t.Fatalf("the fenced producer's commit: %d", code)
	}
	h.completeMarkers()
	r = h.init("t", -1, -1, 60000)
	if r.ErrorCode != 0 || r.ProducerID != pid || r.ProducerEpoch != epoch+2 {
		t.Fatalf("retried init: %+v", r)
	}
}

func TestAbortTimedOut(t *testing.T) {
	h := newHarness(t)
	r := h.init("t", -1, -1, 1000)
	h.add("t", r.ProducerID, r.ProducerEpoch, tpA)
	h.run(h.s.AbortTimedOut(h.now.Add(999 * time.Millisecond)))
	if len(h.markers) != 0 {
		t.Fatal("aborted before its timeout")
	}
	h.run(h.s.AbortTimedOut(h.now.Add(time.Second)))
	if got := h.state("t"); got.State != StatePrepareAbort || got.ProducerEpoch != r.ProducerEpoch+1 {
		t.Fatalf("after the timeout: %+v", got)
	}
	h.completeMarkers()
	if got := h.state("t"); got.State != StateCompleteAbort {
		t.Fatalf("after markers: %v", got.State)
	}
	if code := h.end("t", r.ProducerID, r.ProducerEpoch, true); code != kerr.ProducerFenced.Code {
		t.Fatalf("commit of the timed-out producer: %d", code)
	}
}

func TestLoadedResumesPreparedTransactions(t *testing.T) {
	h := newHarness(t)
	r := h.init("t", -1, -1, 60000)
	h.add("t", r.ProducerID, r.ProducerEpoch, tpA, tpB)
	h.end("t", r.ProducerID, r.ProducerEpoch, true)
	s := h.replayed()
	ms := s.Loaded(h.now)
	if len(ms) != 1 || !ms[0].Commit || ms[0].CoordinatorEpoch != 8 || len(ms[0].Partitions) != 2 {
		t.Fatalf("markers after load: %+v", ms)
	}
	h.s, h.markers = s, ms
	h.completeMarkers()
	if got := h.state("t"); got.State != StateCompleteCommit {
		t.Fatalf("after markers: %v", got.State)
	}
}

func TestMarkersRetriedWhenCompleteFails(t *testing.T) {
	h := newHarness(t)
	r := h.init("t", -1, -1, 60000)
	h.add("t", r.ProducerID, r.ProducerEpoch, tpA)
	h.end("t", r.ProducerID, r.ProducerEpoch, false)
	m := h.markers[0]
	h.markers = nil
	h.writeCode = kerr.CoordinatorNotAvailable.Code
	h.run(m.Done(h.now))
	h.writeCode = 0
	if len(h.markers) != 1 {
		t.Fatalf("markers after a failed completion: %d", len(h.markers))
	}
	h.completeMarkers()
	if got := h.state("t"); got.State != StateCompleteAbort {
		t.Fatalf("state %v", got.State)
	}
}

func TestPartitionFor(t *testing.T) {
	// Java: "my-txn".hashCode() = -1068516029; abs % 50 = 29.
	for _, tc := range []struct {
		id   string
		want int32
	}{{"", 0}, {"a", 97 % 50}} {
		if got := PartitionFor(tc.id, 50); got != tc.want {
			t.Errorf("PartitionFor(%q) = %d, want %d", tc.id, got, tc.want)
		}
	}
}

func TestDescribeAndList(t *testing.T) {
	h := newHarness(t)
	r := h.init("t", -1, -1, 60000)
	h.init("u", -1, -1, 60000)
	h.add("t", r.ProducerID, r.ProducerEpoch, tpB, tpA)
	d := h.s.Describe("t")
	if d.ErrorCode != 0 || d.State != "Ongoing" || d.TimeoutMillis != 60000 || len(d.Topics) != 2 || d.Topics[0].Topic != "a" {
		t.Fatalf("Describe: %+v", d)
	}
	if d := h.s.Describe("nope"); d.ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("Describe of an unknown id: %+v", d)
	}
	if got := h.s.List(h.now, []string{"Ongoing"}, nil, 0); len(got) != 1 || got[0].TransactionalID != "t" {
		t.Fatalf("List Ongoing: %+v", got)
	}
	if got := h.s.List(h.now, nil, nil, 0); len(got) != 2 {
		t.Fatalf("List: %+v", got)
	}
	if got := h.s.List(h.now, nil, nil, time.Second); len(got) != 0 {
		t.Fatalf("List with a duration filter: %+v", got)
	}
	if !KnownState("PrepareEpochFence") || KnownState("Bogus") {
		t.Fatal("KnownState")
	}
}
