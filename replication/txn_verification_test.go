package replication

import (
	"errors"
	"testing"

	"github.com/petrel-broker/petrel/segment"
)

// KIP-890: a transactional batch needs a guard the partition still holds, unless its
// transaction is already open here; a marker voids the guards handed out before it.
func TestTxnVerificationGuards(t *testing.T) {
	p, _ := newLeader(t, segment.DefaultConfig())
	const pid = 9
	if _, err := p.AppendAsLeaderVerified(transactionalBatch(1, pid, 0, 0), 0, nil); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("unverified transactional batch: %v", err)
	}
	if _, err := p.AppendAsLeaderVerified(idempotentBatch(1, 4, 0, 0), 0, nil); err != nil {
		t.Fatalf("idempotent batch: %v", err)
	}
	g, err := p.StartTxnVerification(pid, 0, 0)
	if err != nil || g == nil {
		t.Fatalf("StartTxnVerification: %v %v", g, err)
	}
	if again, _ := p.StartTxnVerification(pid, 0, 0); again != g {
		t.Fatal("a second verification of the same epoch got another guard")
	}
	if _, err := p.AppendAsLeaderVerified(transactionalBatch(1, pid, 0, 0), 0, g); err != nil {
		t.Fatalf("verified batch: %v", err)
	}
	// The transaction is open here: no verification, no guard needed.
	if g2, err := p.StartTxnVerification(pid, 0, 0); err != nil || g2 != nil {
		t.Fatalf("verification inside an open transaction: %v %v", g2, err)
	}
	if _, err := p.AppendAsLeaderVerified(transactionalBatch(1, pid, 0, 1), 0, nil); err != nil {
		t.Fatalf("second batch of the transaction: %v", err)
	}
	// A guard handed out, then the transaction's marker: the guard is void, so a late
	// batch of the finished transaction cannot open a new one.
	if _, err := p.AppendAsLeader(markerBatch(pid, 0, true), 0); err != nil {
		t.Fatal(err)
	}
	late, _ := p.StartTxnVerification(pid, 0, 0)
	if _, err := p.AppendAsLeader(markerBatch(pid, 0, false), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeaderVerified(transactionalBatch(1, pid, 0, 2), 0, late); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("batch with a guard voided by a marker: %v", err)
	}
	// A guard of another epoch does not cover the batch; a new leader epoch voids all.
	other, _ := p.StartTxnVerification(pid, 1, 0)
	if _, err := p.AppendAsLeaderVerified(transactionalBatch(1, pid, 0, 2), 0, other); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("batch with another epoch's guard: %v", err)
	}
	if err := p.BecomeLeaderOf(p.State().LeaderEpoch+1, 0, []int32{p.opts.BrokerID}, []int32{p.opts.BrokerID}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeaderVerified(transactionalBatch(1, pid, 1, 0), 0, other); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("batch with a guard of an older leader epoch: %v", err)
	}
	// Expiry drops guards whose append never came.
	p.ExpireProducers(1000, 1000)
	if len(p.verifying) != 0 {
		t.Fatalf("guards after expiry: %v", p.verifying)
	}
}
