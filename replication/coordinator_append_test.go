package replication

import (
	"errors"
	"testing"

	"github.com/petrel-broker/petrel/segment"
)

// A coordinator's transactional write: every batch at sequence 0 is accepted (no
// sequence check, no duplicate detection), an older epoch is refused, and with verify
// the first batch of a transaction needs the partition's guard.
func TestAppendTransactionalAsCoordinator(t *testing.T) {
	p, _ := newLeader(t, segment.DefaultConfig())
	const pid = 11
	if _, err := p.AppendTransactionalAsCoordinator(transactionalBatch(1, pid, 2, 0), -1, 0, true, nil); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("unverified first batch: %v", err)
	}
	g, err := p.StartTxnVerification(pid, 2, 0)
	if err != nil || g == nil {
		t.Fatalf("StartTxnVerification: %v %v", g, err)
	}
	first, err := p.AppendTransactionalAsCoordinator(transactionalBatch(1, pid, 2, 0), -1, 0, true, g)
	if err != nil {
		t.Fatalf("verified batch: %v", err)
	}
	// The same sequence again is a new batch, not a duplicate.
	second, err := p.AppendTransactionalAsCoordinator(transactionalBatch(1, pid, 2, 0), -1, 0, true, nil)
	if err != nil || second.FirstOffset <= first.LastOffset {
		t.Fatalf("second batch at sequence 0: %+v %v", second, err)
	}
	if _, err := p.AppendTransactionalAsCoordinator(transactionalBatch(1, pid, 1, 0), -1, 0, false, nil); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("older epoch: %v", err)
	}
	if st := p.State(); st.LogEndOffset != second.LastOffset+1 {
		t.Fatalf("log end %d after refused writes, want %d", st.LogEndOffset, second.LastOffset+1)
	}
	// A stale writer's leader epoch is fenced.
	stale := p.State().LeaderEpoch
	if err := p.BecomeLeaderOf(stale+1, 0, []int32{p.opts.BrokerID}, []int32{p.opts.BrokerID}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendTransactionalAsCoordinator(transactionalBatch(1, pid, 2, 0), stale, 0, false, nil); !errors.Is(err, ErrFencedLeaderEpoch) {
		t.Fatalf("stale leader epoch: %v", err)
	}
	// Without verification (transaction.partition.verification.enable false) a new
	// transaction needs no guard.
	if _, err := p.AppendAsLeader(markerBatch(pid, 2, true), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendTransactionalAsCoordinator(transactionalBatch(1, pid, 2, 0), -1, 0, false, nil); err != nil {
		t.Fatalf("unverified write with verification off: %v", err)
	}
}
