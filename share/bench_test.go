package share

import "testing"

// BenchmarkAcquireAcknowledge is the steady state of one share partition: a member
// acquires a fetched 500-record batch and accepts it, writing both changes.
func BenchmarkAcquireAcknowledge(b *testing.B) {
	p := newTestPartition(Config{})
	l := &StateLog{Key: testKey}
	l.Initialize(p.Snapshot(), 0)
	base := int64(0)
	b.ReportAllocs()
	for b.Loop() {
		got, ch := p.Acquire(0, AcquireRequest{MemberID: "a", FetchOffset: base, Batches: []FetchedBatch{plain(base, base+499)}, MaxRecords: 500})
		if _, err := l.Write(ch, p.LeaderEpoch(), 0); err != nil {
			b.Fatal(err)
		}
		ch, err := p.Acknowledge(0, "a", []AcknowledgementBatch{ack(got[0].FirstOffset, got[0].LastOffset, AckAccept)})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := l.Write(ch, p.LeaderEpoch(), 0); err != nil {
			b.Fatal(err)
		}
		base += 500
	}
	b.ReportMetric(float64(b.N)*500/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkAcknowledgePerRecord acknowledges 500 acquired records one type per offset,
// alternating ACCEPT and RELEASE, the worst case for the run representation.
func BenchmarkAcknowledgePerRecord(b *testing.B) {
	types := make([]AcknowledgeType, 500)
	for i := range types {
		types[i] = AckAccept + AcknowledgeType(i%2)
	}
	b.ReportAllocs()
	for b.Loop() {
		p := newTestPartition(Config{})
		p.Acquire(0, AcquireRequest{MemberID: "a", Batches: []FetchedBatch{plain(0, 499)}, MaxRecords: 500})
		if _, err := p.Acknowledge(0, "a", []AcknowledgementBatch{ack(0, 499, types...)}); err != nil {
			b.Fatal(err)
		}
	}
}
