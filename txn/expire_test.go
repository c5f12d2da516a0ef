package txn

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// transactional.id.expiration.ms: an idle id in Empty or Complete* is tombstoned and
// forgotten; an ongoing transaction is never expired.
func TestRemoveExpired(t *testing.T) {
	h := newHarness(t)
	const expiration = time.Hour
	r := h.init("idle", -1, -1, 60000)
	busy := h.init("busy", -1, -1, 60000)
	h.add("busy", busy.ProducerID, busy.ProducerEpoch, tpA)
	h.now = h.now.Add(expiration - time.Millisecond)
	h.run(h.s.RemoveExpired(h.now, expiration))
	if _, ok := h.s.Transaction("idle"); !ok {
		t.Fatal("expired before expiration")
	}
	h.now = h.now.Add(time.Millisecond)
	writes := len(h.log)
	// While the tombstone is written the id is busy.
	h.hold = true
	h.run(h.s.RemoveExpired(h.now, expiration))
	if code := h.add("idle", r.ProducerID, r.ProducerEpoch, tpA); code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("add while the tombstone is written: %d", code)
	}
	h.release(0)
	if _, ok := h.s.Transaction("idle"); ok {
		t.Fatal("idle id not removed")
	}
	if got := h.state("busy"); got.State != StateOngoing {
		t.Fatalf("ongoing transaction expired: %v", got.State)
	}
	if len(h.log) != writes+1 || h.log[writes].Value != nil {
		t.Fatalf("want one tombstone, got %d records", len(h.log)-writes)
	}
	if _, ok := h.replayed().txns["idle"]; ok {
		t.Fatal("the removed id comes back on replay")
	}
	// A failed tombstone keeps the id.
	h.now = h.now.Add(2 * expiration)
	h.end("busy", busy.ProducerID, busy.ProducerEpoch, true)
	h.completeMarkers()
	h.now = h.now.Add(expiration)
	h.writeCode = kerr.NotCoordinator.Code
	h.run(h.s.RemoveExpired(h.now, expiration))
	h.writeCode = 0
	if _, ok := h.s.Transaction("busy"); !ok {
		t.Fatal("a failed tombstone removed the id")
	}
	// Coming back after removal: a new producer id.
	if again := h.init("idle", -1, -1, 60000); again.ErrorCode != 0 || again.ProducerID == r.ProducerID {
		t.Fatalf("init after removal: %+v", again)
	}
}
