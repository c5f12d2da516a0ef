package share

import (
	"errors"
	"slices"
	"testing"
)

var testKey = Key{GroupID: "g", Partition: 0}

func newTestPartition(cfg Config) *Partition { return NewPartition(testKey, cfg, 0, 1) }

func wantAcquired(t *testing.T, got []AcquiredRecords, want ...AcquiredRecords) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("acquired %+v, want %+v", got, want)
	}
}

func wantOffsets(t *testing.T, p *Partition, spso, speo, next int64) {
	t.Helper()
	if p.StartOffset() != spso || p.EndOffset() != speo || p.NextFetchOffset() != next {
		t.Fatalf("SPSO %d SPEO %d next fetch %d, want %d %d %d (in flight %+v)",
			p.StartOffset(), p.EndOffset(), p.NextFetchOffset(), spso, speo, next, p.InFlight())
	}
}

func TestAcquireAcceptMovesStartOffset(t *testing.T) {
	p := newTestPartition(Config{})
	got := acquire1(t, p, 0, "a", 0, 500, BatchOptimized, plain(0, 4), plain(5, 9))
	wantAcquired(t, got, AcquiredRecords{0, 9, 1})
	wantOffsets(t, p, 0, 9, 10)
	// Nothing left to acquire for another member.
	if got := acquire1(t, p, 0, "b", 0, 500, BatchOptimized, plain(0, 4), plain(5, 9)); len(got) != 0 {
		t.Fatalf("records acquired twice: %+v", got)
	}
	ch, err := p.Acknowledge(1, "a", []AcknowledgementBatch{ack(0, 4, AckAccept)})
	if err != nil {
		t.Fatal(err)
	}
	wantOffsets(t, p, 5, 9, 10)
	if want := []StateBatch{{5, 9, Available, 1}}; ch.StartOffset != 5 || len(ch.Batches) != 0 && !slices.Equal(ch.Batches, want) {
		t.Fatalf("change %+v", ch)
	}
	if _, err := p.Acknowledge(1, "a", []AcknowledgementBatch{ack(5, 9, AckAccept)}); err != nil {
		t.Fatal(err)
	}
	wantOffsets(t, p, 10, 10, 10)
	if p.InFlightRecords() != 0 {
		t.Fatalf("in flight %d", p.InFlightRecords())
	}
}

func TestBatchOptimizedIsSoftLimit(t *testing.T) {
	p := newTestPartition(Config{})
	got := acquire1(t, p, 0, "a", 0, 3, BatchOptimized, plain(0, 4), plain(5, 9))
	wantAcquired(t, got, AcquiredRecords{0, 4, 1})
	wantOffsets(t, p, 0, 4, 5)
}

func TestRecordLimitSplitsBatch(t *testing.T) {
	p := newTestPartition(Config{})
	got := acquire1(t, p, 0, "a", 0, 3, RecordLimit, plain(0, 4), plain(5, 9))
	wantAcquired(t, got, AcquiredRecords{0, 2, 1})
	// The rest of the batch is in flight, Available, and fetched next.
	wantOffsets(t, p, 0, 4, 3)
	got = acquire1(t, p, 0, "b", 3, 3, RecordLimit, plain(0, 4), plain(5, 9))
	wantAcquired(t, got, AcquiredRecords{3, 5, 1})
}

func TestBatchSizeCutsAtBatchBoundaries(t *testing.T) {
	p := newTestPartition(Config{})
	req := AcquireRequest{MemberID: "a", Batches: []FetchedBatch{plain(0, 1), plain(2, 3), plain(4, 5)}, MaxRecords: 100, BatchSize: 3}
	got, _ := p.Acquire(0, req)
	wantAcquired(t, got, AcquiredRecords{0, 3, 1}, AcquiredRecords{4, 5, 1})
}

func TestRecordLocksLimitNewRecords(t *testing.T) {
	p := newTestPartition(Config{MaxRecordLocks: 4})
	wantAcquired(t, acquire1(t, p, 0, "a", 0, 100, BatchOptimized, plain(0, 2), plain(3, 5), plain(6, 8)),
		AcquiredRecords{0, 5, 1}) // a whole batch may pass the limit
	if p.CanAcquire() {
		t.Fatal("CanAcquire with a full window")
	}
	if got := acquire1(t, p, 0, "b", 6, 100, BatchOptimized, plain(6, 8)); len(got) != 0 {
		t.Fatalf("acquired past a full window: %+v", got)
	}
	// Released records inside a full window can be acquired again, nothing past it.
	if _, err := p.Acknowledge(0, "a", []AcknowledgementBatch{ack(4, 4, AckRelease)}); err != nil {
		t.Fatal(err)
	}
	if !p.CanAcquire() || p.NextFetchOffset() != 4 {
		t.Fatalf("CanAcquire %v next %d", p.CanAcquire(), p.NextFetchOffset())
	}
	wantAcquired(t, acquire1(t, p, 0, "b", 4, 100, BatchOptimized, plain(3, 5), plain(6, 8)), AcquiredRecords{4, 4, 2})
	wantOffsets(t, p, 0, 5, 6)
}

func TestReleaseRedeliversWithCount(t *testing.T) {
	p := newTestPartition(Config{})
	acquire1(t, p, 0, "a", 0, 10, BatchOptimized, plain(0, 2))
	ch, err := p.Acknowledge(0, "a", []AcknowledgementBatch{ack(0, 2, AckRelease, AckAccept, AckReject)})
	if err != nil {
		t.Fatal(err)
	}
	want := []StateBatch{{0, 0, Available, 1}, {1, 1, Acknowledged, 1}, {2, 2, Archived, 1}}
	if !slices.Equal(ch.Batches, want) || ch.StartOffset != 0 || ch.DeliveryCompleteCount != 2 {
		t.Fatalf("change %+v, want batches %+v", ch, want)
	}
	wantAcquired(t, acquire1(t, p, 0, "b", 0, 10, BatchOptimized, plain(0, 2)), AcquiredRecords{0, 0, 2})
}

func TestDeliveryCountLimitArchives(t *testing.T) {
	p := newTestPartition(Config{DeliveryCountLimit: 2, RecordLockDurationMs: 10})
	acquire1(t, p, 0, "a", 0, 10, BatchOptimized, plain(0, 0), plain(1, 1))
	if _, err := p.Acknowledge(0, "a", []AcknowledgementBatch{ack(1, 1, AckAccept)}); err != nil {
		t.Fatal(err)
	}
	p.Expire(10) // first delivery timed out
	wantAcquired(t, acquire1(t, p, 10, "b", 0, 10, BatchOptimized, plain(0, 0)), AcquiredRecords{0, 0, 2})
	if _, err := p.Acknowledge(10, "b", []AcknowledgementBatch{ack(0, 0, AckRelease)}); err != nil {
		t.Fatal(err)
	}
	// Delivered twice and released: archived, and the SPSO moves past it.
	wantOffsets(t, p, 2, 2, 2)
}

func TestLastDeliveryIsAlone(t *testing.T) {
	p := newTestPartition(Config{DeliveryCountLimit: 3, RecordLockDurationMs: 10})
	acquire1(t, p, 0, "a", 0, 10, BatchOptimized, plain(0, 3))
	if _, err := p.Acknowledge(0, "a", []AcknowledgementBatch{ack(0, 3, AckRelease, AckRelease, AckRelease, AckRelease)}); err != nil {
		t.Fatal(err)
	}
	acquire1(t, p, 0, "a", 0, 10, BatchOptimized, plain(0, 3))
	p.Expire(10)
	// Each record is now on its last attempt: delivered one at a time.
	wantAcquired(t, acquire1(t, p, 10, "b", 0, 10, BatchOptimized, plain(0, 3)), AcquiredRecords{0, 0, 3})
	wantAcquired(t, acquire1(t, p, 10, "b", 1, 10, BatchOptimized, plain(0, 3)), AcquiredRecords{1, 1, 3})
}

func TestLockExpiry(t *testing.T) {
	p := newTestPartition(Config{RecordLockDurationMs: 100})
	acquire1(t, p, 1000, "a", 0, 10, BatchOptimized, plain(0, 4))
	if d, ok := p.NextDeadline(); !ok || d != 1100 {
		t.Fatalf("next deadline %d %v", d, ok)
	}
	if ch := p.Expire(1099); !ch.Empty() {
		t.Fatalf("expired early: %+v", ch)
	}
	// RENEW extends the lock of part of the records.
	if ch, err := p.Acknowledge(1050, "a", []AcknowledgementBatch{ack(0, 1, AckRenew)}); err != nil || !ch.Empty() {
		t.Fatalf("renew: %+v %v", ch, err)
	}
	ch := p.Expire(1100)
	if want := []StateBatch{{2, 4, Available, 1}}; !slices.Equal(ch.Batches, want) {
		t.Fatalf("expired %+v, want %+v", ch.Batches, want)
	}
	if d, _ := p.NextDeadline(); d != 1150 {
		t.Fatalf("next deadline %d after renew", d)
	}
	if _, err := p.Acknowledge(1100, "a", []AcknowledgementBatch{ack(2, 2, AckAccept)}); !errors.Is(err, ErrInvalidRecordState) {
		t.Fatalf("acknowledging an expired record: %v", err)
	}
	wantAcquired(t, acquire1(t, p, 1100, "b", 2, 10, BatchOptimized, plain(0, 4)), AcquiredRecords{2, 4, 2})
}

func TestAcknowledgeErrors(t *testing.T) {
	p := newTestPartition(Config{})
	acquire1(t, p, 0, "a", 0, 10, BatchOptimized, plain(0, 4))
	acquire1(t, p, 0, "b", 5, 10, BatchOptimized, plain(5, 9))
	for _, tc := range []struct {
		name    string
		member  string
		batches []AcknowledgementBatch
		want    error
	}{
		{"another member's records", "a", []AcknowledgementBatch{ack(4, 5, AckAccept)}, ErrInvalidRecordState},
		{"past the end", "a", []AcknowledgementBatch{ack(8, 12, AckAccept)}, ErrInvalidRequest},
		{"unknown type", "a", []AcknowledgementBatch{ack(0, 0, 5)}, ErrInvalidRequest},
		{"type count", "a", []AcknowledgementBatch{ack(0, 2, AckAccept, AckAccept)}, ErrInvalidRequest},
		{"overlap", "a", []AcknowledgementBatch{ack(0, 2, AckAccept), ack(2, 3, AckAccept)}, ErrInvalidRequest},
		{"inverted", "a", []AcknowledgementBatch{ack(3, 2, AckAccept)}, ErrInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := p.InFlight()
			ch, err := p.Acknowledge(0, tc.member, tc.batches)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			if !ch.Empty() || !slices.Equal(before, p.InFlight()) {
				t.Fatalf("a refused acknowledgement changed state: %+v", ch)
			}
		})
	}
	// All or nothing: the valid first batch is not applied either.
	if _, err := p.Acknowledge(0, "a", []AcknowledgementBatch{ack(0, 1, AckAccept), ack(5, 5, AckAccept)}); !errors.Is(err, ErrInvalidRecordState) {
		t.Fatal(err)
	}
	wantOffsets(t, p, 0, 9, 10)
	// Records before the SPSO are ignored.
	if _, err := p.Acknowledge(0, "a", []AcknowledgementBatch{ack(0, 4, AckAccept)}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Acknowledge(0, "a", []AcknowledgementBatch{ack(0, 4, AckAccept)}); err != nil {
		t.Fatalf("acknowledging records before the SPSO: %v", err)
	}
}

func TestReleaseMember(t *testing.T) {
	p := newTestPartition(Config{})
	acquire1(t, p, 0, "a", 0, 10, BatchOptimized, plain(0, 4))
	acquire1(t, p, 0, "b", 5, 10, BatchOptimized, plain(5, 9))
	ch := p.ReleaseMember("a")
	if want := []StateBatch{{0, 4, Available, 0}}; !slices.Equal(ch.Batches, want) {
		t.Fatalf("release %+v, want %+v", ch.Batches, want)
	}
	wantOffsets(t, p, 0, 9, 0)
	// b's records are untouched.
	if _, err := p.Acknowledge(0, "b", []AcknowledgementBatch{ack(5, 9, AckAccept)}); err != nil {
		t.Fatal(err)
	}
	wantAcquired(t, acquire1(t, p, 0, "c", 0, 10, BatchOptimized, plain(0, 4)), AcquiredRecords{0, 4, 1})
}

func TestReadCommittedArchivesAbortedTransactions(t *testing.T) {
	p := newTestPartition(Config{})
	batches := []FetchedBatch{
		plain(0, 1),
		{BaseOffset: 2, LastOffset: 4, ProducerID: 7, Transactional: true}, // aborted
		{BaseOffset: 5, LastOffset: 6, ProducerID: 8, Transactional: true}, // committed
		{BaseOffset: 7, LastOffset: 7, ProducerID: 7, Transactional: true, Control: true},
		{BaseOffset: 8, LastOffset: 8, ProducerID: 8, Transactional: true, Control: true},
		plain(9, 9),
	}
	got, _ := p.Acquire(0, AcquireRequest{MemberID: "a", Batches: batches, MaxRecords: 100, ReadCommitted: true,
		AbortedTransactions: []AbortedTransaction{{ProducerID: 7, FirstOffset: 2}}})
	wantAcquired(t, got, AcquiredRecords{0, 1, 1}, AcquiredRecords{5, 6, 1}, AcquiredRecords{9, 9, 1})
	if _, err := p.Acknowledge(0, "a", []AcknowledgementBatch{ack(0, 1, AckAccept), ack(5, 6, AckAccept), ack(9, 9, AckAccept)}); err != nil {
		t.Fatal(err)
	}
	wantOffsets(t, p, 10, 10, 10)

	// read_uncommitted delivers the aborted records, never the markers.
	p = newTestPartition(Config{})
	got, _ = p.Acquire(0, AcquireRequest{MemberID: "a", Batches: batches, MaxRecords: 100})
	wantAcquired(t, got, AcquiredRecords{0, 6, 1}, AcquiredRecords{9, 9, 1})
}

func TestCompactedOffsetsAreArchived(t *testing.T) {
	p := newTestPartition(Config{RecordLockDurationMs: 10})
	wantAcquired(t, acquire1(t, p, 0, "a", 0, 100, BatchOptimized, plain(0, 2), plain(6, 7)),
		AcquiredRecords{0, 2, 1}, AcquiredRecords{6, 7, 1})
	if _, err := p.Acknowledge(0, "a", []AcknowledgementBatch{ack(0, 2, AckAccept)}); err != nil {
		t.Fatal(err)
	}
	// 3-5 hold no record: the SPSO moves past them with 0-2.
	wantOffsets(t, p, 6, 7, 8)
	p.Expire(10)
	// 6-7 compacted away meanwhile: the next read starts at 9.
	if got := acquire1(t, p, 10, "a", 6, 100, BatchOptimized, plain(9, 9)); len(got) != 1 {
		t.Fatalf("acquired %+v", got)
	}
	wantOffsets(t, p, 9, 9, 10)
}

func TestStartOffsetSkipsEarlierRecords(t *testing.T) {
	p := NewPartition(testKey, Config{}, 5, 1)
	wantAcquired(t, acquire1(t, p, 0, "a", 5, 100, BatchOptimized, plain(3, 7)), AcquiredRecords{5, 7, 1})
	// An empty partition whose first record is later starts there.
	p = NewPartition(testKey, Config{}, 5, 1)
	wantAcquired(t, acquire1(t, p, 0, "a", 5, 100, BatchOptimized, plain(10, 11)), AcquiredRecords{10, 11, 1})
	wantOffsets(t, p, 10, 11, 12)
}

func TestLoadAfterLeaderChange(t *testing.T) {
	cfg := Config{DeliveryCountLimit: 3}
	p := newTestPartition(cfg)
	log := &StateLog{Key: testKey}
	write := func(c Change) {
		t.Helper()
		if _, err := log.Write(c, 1, 0); err != nil {
			t.Fatal(err)
		}
	}
	log.Initialize(p.Snapshot(), 0)
	_, ch := p.Acquire(0, AcquireRequest{MemberID: "a", Batches: []FetchedBatch{plain(0, 9)}, MaxRecords: 100})
	write(ch)
	ch, _ = p.Acknowledge(0, "a", []AcknowledgementBatch{ack(0, 3, AckAccept), ack(6, 6, AckAccept)})
	write(ch)
	// The leader dies with 4, 5 and 7-9 acquired.
	q, ch := Load(testKey, cfg, log.State, 2)
	if !ch.Empty() {
		t.Fatalf("load changed %+v", ch)
	}
	wantOffsets(t, q, 4, 9, 4)
	got := acquire1(t, q, 0, "b", 4, 100, BatchOptimized, plain(0, 9))
	wantAcquired(t, got, AcquiredRecords{4, 5, 2}, AcquiredRecords{7, 9, 2})
}

func TestRedeliveriesAreThrottled(t *testing.T) {
	p := newTestPartition(Config{}) // delivery count limit 5: throttled from 3 deliveries
	for range 3 {
		acquire1(t, p, 0, "a", 0, 100, BatchOptimized, plain(0, 7))
		if _, err := p.Acknowledge(0, "a", []AcknowledgementBatch{ack(0, 7, AckRelease)}); err != nil {
			t.Fatal(err)
		}
	}
	// Delivered 3 times: half the batch per acquisition.
	wantAcquired(t, acquire1(t, p, 0, "b", 0, 100, BatchOptimized, plain(0, 7)), AcquiredRecords{0, 3, 4})
	wantAcquired(t, acquire1(t, p, 0, "b", 4, 100, BatchOptimized, plain(0, 7)), AcquiredRecords{4, 7, 4})
	if _, err := p.Acknowledge(0, "b", []AcknowledgementBatch{ack(0, 7, AckRelease)}); err != nil {
		t.Fatal(err)
	}
	// On the last attempt: one at a time.
	wantAcquired(t, acquire1(t, p, 0, "b", 0, 100, BatchOptimized, plain(0, 7)), AcquiredRecords{0, 0, 5})
	// A throttled acquisition takes nothing past the throttled records.
	q := newTestPartition(Config{})
	for range 3 {
		acquire1(t, q, 0, "a", 0, 100, BatchOptimized, plain(0, 3))
		if _, err := q.Acknowledge(0, "a", []AcknowledgementBatch{ack(0, 3, AckRelease)}); err != nil {
			t.Fatal(err)
		}
	}
	wantAcquired(t, acquire1(t, q, 0, "b", 0, 100, BatchOptimized, plain(0, 3), plain(4, 5)), AcquiredRecords{0, 1, 4})
}
