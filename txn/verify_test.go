package txn

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestVerifyPartitions(t *testing.T) {
	h := newHarness(t)
	r := h.init("t", -1, -1, 60000)
	pid, epoch := r.ProducerID, r.ProducerEpoch
	verify := func(pid int64, epoch int16) (int16, []int16) {
		return h.s.VerifyPartitions("t", pid, epoch, []TopicPartition{tpA, tpB})
	}
	abortable := kerr.TransactionAbortable.Code
	if code, per := verify(pid, epoch); code != 0 || !slices.Equal(per, []int16{abortable, abortable}) {
		t.Fatalf("no transaction: %d %v", code, per)
	}
	writes := len(h.log)
	h.add("t", pid, epoch, tpA)
	if code, per := verify(pid, epoch); code != 0 || !slices.Equal(per, []int16{0, abortable}) {
		t.Fatalf("tpA added: %d %v", code, per)
	}
	if len(h.log) != writes+1 {
		t.Fatalf("verification wrote %d records", len(h.log)-writes-1)
	}
	// tpB's AddPartitionsToTxn being written: tpA is still answered, tpB waits.
	h.hold = true
	h.add("t", pid, epoch, tpB)
	if code, per := verify(pid, epoch); code != 0 || !slices.Equal(per, []int16{0, kerr.ConcurrentTransactions.Code}) {
		t.Fatalf("tpB being added: %d %v", code, per)
	}
	h.release(0)
	if code, per := verify(pid, epoch); code != 0 || !slices.Equal(per, []int16{0, 0}) {
		t.Fatalf("both added: %d %v", code, per)
	}
	writes++
	for _, tc := range []struct {
		pid   int64
		epoch int16
		want  int16
	}{{pid + 1, epoch, kerr.InvalidProducerIDMapping.Code}, {pid, epoch + 1, kerr.ProducerFenced.Code}} {
		if code, _ := verify(tc.pid, tc.epoch); code != tc.want {
			t.Errorf("verify(%d, %d) = %d, want %d", tc.pid, tc.epoch, code, tc.want)
		}
	}
	if code, _ := h.s.VerifyPartitions("unknown", pid, epoch, []TopicPartition{tpA}); code != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("unknown id: %d", code)
	}
	h.end("t", pid, epoch, true)
	if code, _ := verify(pid, epoch); code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("while committing: %d", code)
	}
	h.completeMarkers()
	// The transaction is over: a late write to tpA must not be taken for a new one.
	if code, per := verify(pid, epoch); code != 0 || !slices.Equal(per, []int16{abortable, abortable}) {
		t.Fatalf("after the commit: %d %v", code, per)
	}
}

// An add arriving while the producer's previous add, or its previous transaction's
// completion, is being written waits for that write instead of getting
// CONCURRENT_TRANSACTIONS.
func TestAddPartitionsWaitsForPendingWrite(t *testing.T) {
	h := newHarness(t)
	r := h.init("t", -1, -1, 60000)
	pid, epoch := r.ProducerID, r.ProducerEpoch
	h.hold = true
	first := h.add("t", pid, epoch, tpA)
	second := int16(-1)
	h.run(h.s.AddPartitions(h.now, "t", pid, epoch, []TopicPartition{tpB}, func(c int16) { second = c }))
	if first != -1 || second != -1 {
		t.Fatalf("answered before the write: %d %d", first, second)
	}
	h.release(0)
	if second != 0 {
		t.Fatalf("queued add: %d", second)
	}
	if got := h.state("t"); got.State != StateOngoing || len(got.Partitions) != 2 {
		t.Fatalf("after both adds: %+v", got)
	}
	// Behind the completion of the previous transaction.
	h.end("t", pid, epoch, true)
	h.hold = true
	for len(h.markers) > 0 {
		m := h.markers[0]
		h.markers = h.markers[1:]
		h.run(m.Done(h.now))
	}
	next := int16(-1)
	h.run(h.s.AddPartitions(h.now, "t", pid, epoch, []TopicPartition{tpA}, func(c int16) { next = c }))
	if next != -1 {
		t.Fatalf("answered while the completion is written: %d", next)
	}
	h.release(0)
	if got := h.state("t"); next != 0 || got.State != StateOngoing || len(got.Partitions) != 1 {
		t.Fatalf("add after the completion: code %d, %+v", next, got)
	}
}
