package replication

// The replication hot paths' benchmarks that `petrel perf regress` compares with a
// baseline revision and CI checks for allocations (docs/bench/allocs.txt): the leader's
// append (the produce path below the handler), a consumer's fetch read and its
// encoding as bytes and file sections (the fetch path before sendfile), and the
// purgatory parking and releasing an acks=all produce and a consumer's fetch. Records
// are 1 KiB of random bytes, 16 to a batch, as the produce path benchmarks send.
//
//	go test ./replication/ -run '^$' -bench 'LeaderAppend|FetchServerRead|Purgatory' -benchmem

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/rpc"
	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// hotRecords and hotValueSize shape every hot-path batch: 16 records of 1 KiB.
const (
	hotRecords   = 16
	hotValueSize = 1024
)

// hotBatch is a v2 batch of hotRecords random (incompressible) values, no keys, as a
// producer without idempotence sends it.
func hotBatch(b *testing.B) []byte {
	b.Helper()
	var recs []byte
	for i := range hotRecords {
		value := make([]byte, hotValueSize)
		if _, err := rand.Read(value); err != nil {
			b.Fatal(err)
		}
		rec := kmsg.Record{OffsetDelta: int32(i), Value: value}
		rec.Length = int32(len(rec.AppendTo(nil)) - 1) // a zero Length encoded in one byte
		recs = rec.AppendTo(recs)
	}
	ms := time.Now().UnixMilli()
	rb := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: hotRecords - 1,
		FirstTimestamp: ms, MaxTimestamp: ms, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: hotRecords, Records: recs}
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// hotLeader is a leader replica (broker 0) of topic "hot" partition 0 in a fresh
// directory, with isr its in-sync replicas (0 first).
func hotLeader(b *testing.B, isr ...int32) *Partition {
	b.Helper()
	log, _, err := segment.Open(b.TempDir(), segment.DefaultConfig(), segment.OpenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	p := NewPartition("hot", 0, log, 0, Options{BrokerID: 0})
	b.Cleanup(func() { p.Stop(false) })
	if err := p.BecomeLeaderOf(1, 0, isr, isr); err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkLeaderAppend is the leader's side of a produce below the handler: one
// 16 KiB batch appended (leadership and producer checks, the log append, the high
// watermark), the leader alone in its ISR and no fsync (the default flush policy).
func BenchmarkLeaderAppend(b *testing.B) {
	p := hotLeader(b, 0)
	batch := hotBatch(b)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.AppendAsLeader(batch, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFetchServerRead is a consumer's sessionless Fetch v12 of one partition,
// partition_max_bytes 1 MiB, read by the FetchServer from a log of 4 MiB (the records
// held in the segment file, not copied) and encoded as the frame's bytes and file
// sections that the writer sends with sendfile, then released. Each fetch starts at
// another batch.
func BenchmarkFetchServerRead(b *testing.B) {
	const batches = 256 // of 16 KiB: 4 MiB
	p := hotLeader(b, 0)
	batch := hotBatch(b)
	for range batches {
		if _, err := p.AppendAsLeader(batch, 1); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	src := &fetchSource{parts: map[string]*Partition{"hot": p}}
	s := &FetchServer{Sessions: NewFetchSessionCache(10, 1000), Purgatory: NewPurgatory(ctx), Source: src, Leader: &Quota{}}
	r := consumerFetch(12, 1<<20, "hot")
	var buf []byte
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.Topics[0].Partitions[0].FetchOffset = int64(i%(batches-64)) * hotRecords
		a, n, errored := s.Read(r, nil)
		if errored || n < 1<<19 {
			b.Fatalf("read %d bytes, errored %v", n, errored)
		}
		parts := rpc.Parts{B: buf[:0]}
		a.AppendParts(&parts)
		buf = parts.B
		a.Release()
		b.SetBytes(parts.Len())
	}
}

// BenchmarkPurgatoryAcksAll is an acks=all produce parked and released: the leader
// appends a batch, parks the write in the purgatory (WaitAcksAll), and its follower's
// fetch past the batch moves the high watermark, which answers the write on the
// fetch's goroutine.
func BenchmarkPurgatoryAcksAll(b *testing.B) {
	p := hotLeader(b, 0, 1)
	pg := NewPurgatory(context.Background())
	batch := hotBatch(b)
	answered := make(chan []Outcome, 1)
	done := func(o []Outcome) { answered <- o }
	writes := []AcksAllWrite{{Partition: p, MinISR: 2}}
	follower := FollowerFetch{ReplicaID: 1, CurrentLeaderEpoch: 1, LastFetchedEpoch: -1, MaxBytes: 1 << 20}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		info, err := p.AppendAsLeader(batch, 2)
		if err != nil {
			b.Fatal(err)
		}
		writes[0].End = info.LastOffset + 1
		pg.WaitAcksAll(ctx, writes, 30*time.Second, done)
		follower.FetchOffset = writes[0].End
		res, _, err := p.ReadForFollowerHeld(follower, time.Now())
		res.Held.Release()
		if err != nil {
			b.Fatal(err)
		}
		if o := <-answered; o[0] != OutcomeCommitted {
			b.Fatalf("outcome %v", o[0])
		}
	}
}

// BenchmarkPurgatoryFetch is a consumer's fetch at the log end parked in the
// purgatory (min_bytes 1, max_wait_ms 30 s) and released by the next append, whose
// goroutine reads and answers it.
func BenchmarkPurgatoryFetch(b *testing.B) {
	p := hotLeader(b, 0)
	batch := hotBatch(b)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	src := &fetchSource{parts: map[string]*Partition{"hot": p}}
	s := &FetchServer{Sessions: NewFetchSessionCache(10, 1000), Purgatory: NewPurgatory(ctx), Source: src, Leader: &Quota{}}
	r := consumerFetch(12, 1<<20, "hot")
	r.MinBytes, r.MaxWaitMillis = 1, 30_000
	answered := make(chan kmsg.Response, 1)
	complete := func(resp kmsg.Response) { answered <- resp }
	park := func() func(kmsg.Response) { return complete }
	b.ReportAllocs()
	for i := int64(0); b.Loop(); i++ {
		r.Topics[0].Partitions[0].FetchOffset = i * hotRecords
		if resp := s.Fetch(ctx, r, nil, park); resp != nil {
			b.Fatalf("fetch at the log end answered at once: %+v", resp)
		}
		if _, err := p.AppendAsLeader(batch, 1); err != nil {
			b.Fatal(err)
		}
		a, ok := (<-answered).(*FetchAnswer)
		if !ok || a.Held(0).Len() != int64(len(batch)) {
			b.Fatalf("answer %+v", a)
		}
		a.Release()
	}
}
