package group

import (
	"testing"
)

// A commit answered COORDINATOR_NOT_AVAILABLE at the write timeout whose batch lands
// afterwards is applied then: the live shard shows what a load of the log shows.
func TestTimedOutCommitAppliedWhenItLands(t *testing.T) {
	h := newHarness(t, testConfig())
	h.commit(8, "g", "", -1, map[int32]int64{0: 1})
	h.hold = true
	c := h.commit(8, "g", "", -1, map[int32]int64{0: 2})
	h.timeOut()
	if !c.done() || commitCodes(c.resp)[0] != errCoordinatorNotAvailable {
		t.Fatalf("timed-out commit answered %+v", c.resp)
	}
	if got := view(h.s); got != "0:1/88 1:-1/0 2:-1/0 3:-1/0 " {
		t.Fatalf("before it lands: %s", got)
	}
	h.release(0)
	if got := view(h.s); got != "0:2/0 1:-1/0 2:-1/0 3:-1/0 " {
		t.Fatalf("after it landed: %s", got)
	}
	if got := view(replayLog(t, h.batches)); got != view(h.s) {
		t.Fatalf("a load shows %s, the live shard %s", got, view(h.s))
	}
}

// Two commits of a partition, the first timed out: both land in log order and the
// second's offset stays, live and in a load.
func TestTimedOutCommitThenLaterCommitKeepsTheLater(t *testing.T) {
	h := newHarness(t, testConfig())
	h.hold = true
	first := h.commit(8, "g", "", -1, map[int32]int64{0: 5, 1: 5})
	h.timeOut()
	h.hold = true
	second := h.commit(8, "g", "", -1, map[int32]int64{0: 7})
	if !first.done() || second.done() {
		t.Fatalf("answered: first %v, second %v", first.done(), second.done())
	}
	h.release(0)
	if !second.done() || commitCodes(second.resp)[0] != 0 {
		t.Fatalf("second commit %+v", second.resp)
	}
	if got := view(h.s); got != "0:7/0 1:5/0 2:-1/0 3:-1/0 " {
		t.Fatalf("live: %s", got)
	}
	if got := view(replayLog(t, h.batches)); got != view(h.s) {
		t.Fatalf("a load shows %s, the live shard %s", got, view(h.s))
	}
}

// A commit whose append failed is applied neither live nor by a load; the commit after
// it is.
func TestFailedCommitAppliedNowhere(t *testing.T) {
	h := newHarness(t, testConfig())
	h.writeCode = errCoordinatorNotAvailable
	if c := h.commit(8, "g", "", -1, map[int32]int64{0: 9}); commitCodes(c.resp)[0] != errCoordinatorNotAvailable {
		t.Fatalf("failed commit %+v", c.resp)
	}
	h.writeCode = 0
	h.commit(8, "g", "", -1, map[int32]int64{1: 3})
	if got := view(h.s); got != "0:-1/0 1:3/0 2:-1/0 3:-1/0 " {
		t.Fatalf("live: %s", got)
	}
	if got := view(replayLog(t, h.batches)); got != view(h.s) {
		t.Fatalf("a load shows %s, the live shard %s", got, view(h.s))
	}
}

// A timed-out TxnOffsetCommit stays staged: when it lands, the transaction's COMMIT
// marker materialises it, as a load does.
func TestTimedOutTxnOffsetCommitStaysStaged(t *testing.T) {
	h := newHarness(t, testConfig())
	h.hold = true
	r := h.txnCommit("g", 7, map[int32]int64{0: 10})
	h.timeOut()
	if !r.done() || r.resp.Topics[0].Partitions[0].ErrorCode != errCoordinatorNotAvailable {
		t.Fatalf("timed-out TxnOffsetCommit %+v", r.resp)
	}
	h.release(0)
	h.marker(7, true)
	if got := view(h.s); got != "0:10/0 1:-1/0 2:-1/0 3:-1/0 " {
		t.Fatalf("after COMMIT: %s", got)
	}
	if got := view(replayLog(t, h.batches)); got != view(h.s) {
		t.Fatalf("a load shows %s, the live shard %s", got, view(h.s))
	}
}

// A timed-out deletion (OffsetDelete, DeleteGroups) that lands deletes, live as in a
// load.
func TestTimedOutDeletionAppliedWhenItLands(t *testing.T) {
	h := newHarness(t, testConfig())
	h.commit(8, "g", "", -1, map[int32]int64{0: 1})
	h.hold = true
	code := int16(-2)
	h.run(h.s.DeleteGroup(h.now, "g", func(c int16) { code = c }))
	h.timeOut()
	if code != errCoordinatorNotAvailable {
		t.Fatalf("timed-out DeleteGroup answered %d", code)
	}
	h.release(0)
	if code != errCoordinatorNotAvailable {
		t.Fatalf("answered again: %d", code)
	}
	if _, ok := h.s.groups["g"]; ok {
		t.Fatal("the group survived its landed tombstone")
	}
	if got := view(replayLog(t, h.batches)); got != view(h.s) {
		t.Fatalf("a load shows %s, the live shard %s", got, view(h.s))
	}
}

// The leader's assignment timed out: the group rebalances, as Kafka's does when the
// append fails with the timeout, and the late landing changes nothing more.
func TestTimedOutAssignmentRebalances(t *testing.T) {
	h := newHarness(t, testConfig())
	j := h.join("g", "")
	h.advance(0)
	if !j.done() || j.resp.ErrorCode != 0 {
		t.Fatalf("join %+v", j.resp)
	}
	id, gen := j.resp.MemberID, j.resp.Generation
	h.hold = true
	s := h.sync("g", id, gen, map[string]string{id: "a"})
	h.timeOut()
	if !s.done() || s.resp.ErrorCode != errCoordinatorNotAvailable {
		t.Fatalf("timed-out SyncGroup %+v", s.resp)
	}
	if st := h.state("g"); st != "PreparingRebalance" {
		t.Fatalf("state %s after the timeout", st)
	}
	h.release(0)
	if st := h.state("g"); st != "PreparingRebalance" {
		t.Fatalf("state %s after the late landing", st)
	}
}
