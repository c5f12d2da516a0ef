package replication

import (
	"errors"
	"testing"

	"github.com/petrel-broker/petrel/segment"
)

// A transaction marker with a newer epoch fences the producer's older epoch; an older
// marker is refused; the marker-only entry survives a snapshot.
func TestTransactionMarkerFencesProducer(t *testing.T) {
	s := NewProducerStates()
	data := segment.BatchHeader{ProducerID: 7, ProducerEpoch: 0, BaseSequence: 0, BaseOffset: 0, MaxTimestamp: 10}
	s.Update(data)
	marker := segment.BatchHeader{ProducerID: 7, ProducerEpoch: 1, BaseSequence: -1, BaseOffset: 1, Attributes: 0x30, MaxTimestamp: 11}
	if _, err := s.Check(marker); err != nil {
		t.Fatalf("marker of a newer epoch: %v", err)
	}
	s.Update(marker)
	next := segment.BatchHeader{ProducerID: 7, ProducerEpoch: 0, BaseSequence: 1, BaseOffset: 2}
	if _, err := s.Check(next); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("a batch of the fenced epoch: %v", err)
	}
	old := marker
	old.ProducerEpoch = 0
	if _, err := s.Check(old); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("a marker of an older epoch: %v", err)
	}
	fresh := segment.BatchHeader{ProducerID: 7, ProducerEpoch: 2, BaseSequence: 0, BaseOffset: 2}
	if _, err := s.Check(fresh); err != nil {
		t.Fatalf("the new producer's first batch: %v", err)
	}
	got, err := DecodeProducerSnapshot(EncodeProducerSnapshot(s))
	if err != nil {
		t.Fatal(err)
	}
	if e := got.Entry(7); e == nil || e.ProducerEpoch != 1 || len(e.Batches) != 0 || e.LastTimestamp != 11 {
		t.Fatalf("snapshot entry %+v", e)
	}
}

// A Transactions V2 marker (KIP-1228) must be newer than the producer's epoch here; a
// TV0/TV1 marker at the same epoch is still accepted; a refused marker writes nothing.
func TestMarkerOfTransactionVersion2NeedsANewerEpoch(t *testing.T) {
	p, _ := newLeader(t, segment.DefaultConfig())
	const pid = 9
	if _, err := p.AppendAsLeader(transactionalBatch(1, pid, 3, 0), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendMarkerAsLeaderInEpoch(markerBatch(pid, 4, true), -1, 0, 2); err != nil {
		t.Fatalf("TV2 marker with the bumped epoch: %v", err)
	}
	end := p.State().LogEndOffset
	if _, err := p.AppendMarkerAsLeaderInEpoch(markerBatch(pid, 4, true), -1, 0, 2); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("TV2 marker again at the same epoch: %v, want ErrInvalidProducerEpoch", err)
	}
	if got := p.State().LogEndOffset; got != end {
		t.Fatalf("the refused marker was written: log end %d, was %d", got, end)
	}
	if _, err := p.AppendMarkerAsLeaderInEpoch(markerBatch(pid, 4, true), -1, 0, 0); err != nil {
		t.Fatalf("TV0 marker at the same epoch: %v", err)
	}
	if _, err := p.AppendMarkerAsLeaderInEpoch(markerBatch(pid, 5, false), -1, 0, 2); err != nil {
		t.Fatalf("TV2 marker of a newer epoch: %v", err)
	}
}
