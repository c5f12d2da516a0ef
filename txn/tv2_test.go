package txn

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// endV2 sends a TV2 EndTxn (v5) and returns its code, producer id and epoch.
func (h *harness) endV2(id string, pid int64, epoch int16, commit bool) (int16, int64, int16) {
	h.t.Helper()
	code, gotPID, gotEpoch := int16(-1), int64(-2), int16(-2)
	h.run(h.s.EndTransactionV2(h.now, id, pid, epoch, commit, h.newPID, func(c int16, p int64, e int16) {
		code, gotPID, gotEpoch = c, p, e
	}))
	return code, gotPID, gotEpoch
}

func (h *harness) addImplicit(id string, pid int64, epoch int16, tps ...TopicPartition) int16 {
	code := int16(-1)
	h.run(h.s.AddPartitionsImplicit(h.now, id, pid, epoch, tps, func(c int16) { code = c }))
	return code
}

func TestTV2EndBumpsEpochAndMarkersCarryIt(t *testing.T) {
	h := newHarness(t)
	r := h.init("t1", -1, -1, 60000)
	pid := r.ProducerID
	for i, commit := range []bool{true, false, true} {
		epoch := int16(i)
		if code := h.addImplicit("t1", pid, epoch, tpA, tpB); code != 0 {
			t.Fatalf("txn %d: implicit add: %d", i, code)
		}
		code, gotPID, gotEpoch := h.endV2("t1", pid, epoch, commit)
		if code != 0 || gotPID != pid || gotEpoch != epoch+1 {
			t.Fatalf("txn %d: EndTxn v5 = %d, %d/%d; want 0, %d/%d", i, code, gotPID, gotEpoch, pid, epoch+1)
		}
		if len(h.markers) != 1 || h.markers[0].ProducerEpoch != epoch+1 || h.markers[0].Commit != commit || len(h.markers[0].Partitions) != 2 ||
			h.markers[0].TransactionVersion != 2 { // KIP-1228: checked strictly by the leaders
			t.Fatalf("txn %d: markers %+v, want the bumped epoch %d", i, h.markers, epoch+1)
		}
		h.completeMarkers()
		// The old epoch is fenced from the next transaction.
		if code := h.addImplicit("t1", pid, epoch, tpA); code != kerr.ProducerFenced.Code {
			t.Fatalf("txn %d: add with the previous epoch = %d, want PRODUCER_FENCED", i, code)
		}
	}
	st := h.state("t1")
	if st.ProducerEpoch != 3 || st.State != StateCompleteCommit || !st.ClientTV2 {
		t.Fatalf("state: %+v", st)
	}
	got := h.replayed().txns["t1"]
	if got.ProducerID != pid || got.ProducerEpoch != 3 || got.LastProducerEpoch != 2 || !got.ClientTV2 || got.State != StateCompleteCommit {
		t.Fatalf("replayed: %+v", got)
	}
}

func TestTV2EndRetryAndRefusals(t *testing.T) {
	h := newHarness(t)
	pid := h.init("t1", -1, -1, 60000).ProducerID
	h.addImplicit("t1", pid, 0, tpA)
	// While the markers are written, a retry of the same end is CONCURRENT_TRANSACTIONS.
	if code, _, _ := h.endV2("t1", pid, 0, true); code != 0 {
		t.Fatalf("commit: %d", code)
	}
	if code, _, _ := h.endV2("t1", pid, 0, true); code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("retry while prepared: %d", code)
	}
	h.completeMarkers()
	// A retry of the completed commit gets the current id and epoch.
	if code, p, e := h.endV2("t1", pid, 0, true); code != 0 || p != pid || e != 1 {
		t.Fatalf("retried commit = %d %d/%d", code, p, e)
	}
	// The other outcome with the old epoch is fenced; commit with nothing open is
	// INVALID_TXN_STATE; an unknown producer id is INVALID_PRODUCER_ID_MAPPING.
	if code, _, _ := h.endV2("t1", pid, 0, false); code != kerr.InvalidTxnState.Code {
		t.Fatalf("abort retry of a commit: %d", code)
	}
	if code, _, _ := h.endV2("t1", pid, 1, true); code != kerr.InvalidTxnState.Code {
		t.Fatalf("commit with nothing open: %d", code)
	}
	if code, _, _ := h.endV2("t1", 4242, 1, true); code != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("unknown producer id: %d", code)
	}
	// An empty abort bumps the epoch.
	if code, p, e := h.endV2("t1", pid, 1, false); code != 0 || p != pid || e != 2 {
		t.Fatalf("empty abort = %d %d/%d", code, p, e)
	}
	if len(h.markers) != 1 || len(h.markers[0].Partitions) != 0 {
		t.Fatalf("empty abort markers: %+v", h.markers)
	}
	h.completeMarkers()
	// An ongoing transaction cannot be ended with the previous epoch.
	h.addImplicit("t1", pid, 2, tpB)
	if code, _, _ := h.endV2("t1", pid, 1, true); code != kerr.ProducerFenced.Code {
		t.Fatalf("end with the previous epoch of an ongoing transaction: %d", code)
	}
}

func TestTV2EndRotatesProducerIDAtExhaustedEpoch(t *testing.T) {
	h := newHarness(t)
	pid := h.init("t1", -1, -1, 60000).ProducerID
	h.s.txns["t1"].ProducerEpoch = 1<<15 - 2 // exhausted: the next end rotates
	old := int16(1<<15 - 2)
	h.addImplicit("t1", pid, old, tpA)
	code, newPID, newEpoch := h.endV2("t1", pid, old, true)
	if code != 0 || newPID == pid || newEpoch != 0 {
		t.Fatalf("EndTxn at the exhausted epoch = %d %d/%d, want a new id at epoch 0", code, newPID, newEpoch)
	}
	if m := h.markers[0]; m.ProducerID != pid || m.ProducerEpoch != 1<<15-1 {
		t.Fatalf("markers %d/%d, want the old id at the last epoch", m.ProducerID, m.ProducerEpoch)
	}
	// The new id waits for the completion instead of being refused.
	if code := h.addImplicit("t1", newPID, 0, tpB); code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("add with the new id before completion: %d", code)
	}
	replayedPrepared := h.replayed().txns["t1"]
	if replayedPrepared.NextProducerID != newPID || replayedPrepared.State != StatePrepareCommit {
		t.Fatalf("replayed prepared: %+v", replayedPrepared)
	}
	h.completeMarkers()
	st := h.state("t1")
	if st.ProducerID != newPID || st.ProducerEpoch != 0 || st.LastProducerID != pid || st.NextProducerID != -1 {
		t.Fatalf("after completion: %+v", st)
	}
	if code, p, e := h.endV2("t1", pid, old, true); code != 0 || p != newPID || e != 0 {
		t.Fatalf("retry with the old id = %d %d/%d", code, p, e)
	}
	if code := h.addImplicit("t1", newPID, 0, tpB); code != 0 {
		t.Fatalf("add with the new id: %d", code)
	}
	got := h.replayed().txns["t1"]
	if got.ProducerID != newPID || got.LastProducerID != pid || got.NextProducerID != -1 || got.State != StateOngoing {
		t.Fatalf("replayed: %+v", got)
	}
}

// TestTV1RecordsUnchanged: a TV1 producer's records stay value version 0 (an older
// Petrel reads them), and a log of version 0 records replays as before.
func TestTV1RecordsUnchanged(t *testing.T) {
	h := newHarness(t)
	pid := h.init("t1", -1, -1, 60000).ProducerID
	h.add("t1", pid, 0, tpA)
	if code := h.end("t1", pid, 0, true); code != 0 {
		t.Fatalf("TV1 end: %d", code)
	}
	if m := h.markers[0]; m.ProducerEpoch != 0 {
		t.Fatalf("TV1 marker epoch %d, want 0 (no bump)", m.ProducerEpoch)
	}
	h.completeMarkers()
	for i, r := range h.log {
		var v kmsg.TxnMetadataValue
		if err := v.ReadFrom(r.Value); err != nil || v.Version != 0 {
			t.Fatalf("record %d: version %d, %v", i, v.Version, err)
		}
	}
	if st := h.state("t1"); st.ProducerEpoch != 0 || st.ClientTV2 || st.State != StateCompleteCommit {
		t.Fatalf("TV1 state: %+v", st)
	}
	// A TV2 end after TV1 transactions on the same id takes over (the client upgraded).
	h.addImplicit("t1", pid, 0, tpB)
	if code, _, e := h.endV2("t1", pid, 0, false); code != 0 || e != 1 {
		t.Fatalf("TV2 end after TV1: %d epoch %d", code, e)
	}
	var last kmsg.TxnMetadataValue
	if err := last.ReadFrom(h.log[len(h.log)-1].Value); err != nil || last.Version != 1 || last.ClientTransactionVersion != 2 ||
		last.PreviousProducerID != -1 || last.NextProducerID != -1 || last.NextProducerEpoch != -1 {
		t.Fatalf("TV2 record: %+v, %v", last, err)
	}
}
