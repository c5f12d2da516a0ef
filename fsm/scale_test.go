package fsm

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/petrel-broker/petrel/metadata"
)

// scaleImage applies, through the FSM as Raft would, the entries that create
// partitions partitions of replication factor 3 on 3 brokers: topics of 1,000
// partitions, ten topics (10,000 partitions, the CreateTopics limit) per entry, each
// entry encoded as the controller encodes it.
func scaleImage(tb testing.TB, partitions int) *FSM {
	return scaleImageShaped(tb, partitions, 1000, 10)
}

// scaleImageShaped is scaleImage with topics of perTopic partitions, topicsPerEntry
// topics to an entry (CreateTopics writes one entry per topic).
func scaleImageShaped(tb testing.TB, partitions, perTopic, topicsPerEntry int) *FSM {
	tb.Helper()
	f := New()
	index := uint64(1)
	apply := func(recs ...metadata.Record) {
		data, err := metadata.EncodeRecords(recs...)
		if err != nil {
			tb.Fatal(err)
		}
		res := f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: data}).(ApplyResult)
		if res.Err != nil {
			tb.Fatal(res.Err)
		}
		index++
	}
	var brokers []metadata.Record
	for id := int32(0); id < 3; id++ {
		brokers = append(brokers, metadata.RegisterBrokerRecord{BrokerID: id,
			Listeners: []metadata.Endpoint{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092 + id}}})
	}
	apply(brokers...)
	var recs []metadata.Record
	for topic := 0; topic*perTopic < partitions; topic++ {
		id := metadata.Uuid{byte(topic >> 8), byte(topic), 1}
		recs = append(recs, metadata.TopicRecord{Name: fmt.Sprintf("scale-%05d", topic), TopicID: id})
		for p := int32(0); p < int32(perTopic); p++ {
			r := []int32{(p + int32(topic)) % 3, (p + int32(topic) + 1) % 3, (p + int32(topic) + 2) % 3}
			recs = append(recs, metadata.PartitionRecord{TopicID: id, PartitionID: p, Replicas: r, ISR: r, Leader: r[0]})
		}
		if (topic+1)%topicsPerEntry == 0 {
			apply(recs...)
			recs = recs[:0]
		}
	}
	if len(recs) > 0 {
		apply(recs...)
	}
	return f
}

// memorySink is a raft.SnapshotSink over a buffer.
type memorySink struct{ bytes.Buffer }

func (s *memorySink) ID() string    { return "bench" }
func (s *memorySink) Cancel() error { return nil }
func (s *memorySink) Close() error  { return nil }

func persist(tb testing.TB, f *FSM) *memorySink {
	tb.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		tb.Fatal(err)
	}
	sink := &memorySink{}
	if err := snap.Persist(sink); err != nil {
		tb.Fatal(err)
	}
	return sink
}

// BenchmarkCreate100kPartitions: the FSM side of creating 100,000 partitions RF 3
// (encoding the entries, decoding and applying them), in the shapes of CreateTopics
// requests: 10 entries of 10 topics of 1,000 (the request limit), 100 entries of one
// topic of 1,000, and 20 entries of one topic of 5,000. A cost per entry that grows
// with the partitions already there shows as the 100-entry shape falling behind.
func BenchmarkCreate100kPartitions(b *testing.B) {
	for _, shape := range []struct {
		name                     string
		perTopic, topicsPerEntry int
	}{{"10x10000", 1000, 10}, {"100x1000", 1000, 1}, {"20x5000", 5000, 1}} {
		b.Run(shape.name, func(b *testing.B) {
			for b.Loop() {
				scaleImageShaped(b, 100_000, shape.perTopic, shape.topicsPerEntry)
			}
		})
	}
}

// BenchmarkCreate10kTopics: 100,000 partitions RF 3 as 10,000 topics of 10
// partitions, one entry per topic (as CreateTopics wrote them before) and 909 topics
// per entry (as it writes them now: one entry per request, at most 10,000 records).
// The cost per entry that does not depend on its size (the copy-on-write image's
// topic maps) shows in the first.
func BenchmarkCreate10kTopics(b *testing.B) {
	b.Run("entry-per-topic", func(b *testing.B) {
		for b.Loop() {
			scaleImageShaped(b, 100_000, 10, 1)
		}
	})
	b.Run("entry-per-request", func(b *testing.B) {
		for b.Loop() {
			scaleImageShaped(b, 100_000, 10, 909)
		}
	})
}

// BenchmarkSnapshot100kPartitions writes and restores the snapshot of a
// 100,000-partition image and reports its size and the image's heap per partition.
func BenchmarkSnapshot100kPartitions(b *testing.B) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f := scaleImage(b, 100_000)
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := float64(after.HeapAlloc-before.HeapAlloc) / 100_000
	runtime.KeepAlive(f)
	sink := persist(b, f)
	b.Run("persist", func(b *testing.B) {
		for b.Loop() {
			persist(b, f)
		}
		b.ReportMetric(float64(sink.Len()), "snapshot-B")
		b.ReportMetric(heap, "image-heap-B/partition")
	})
	b.Run("restore", func(b *testing.B) {
		data := sink.Bytes()
		for b.Loop() {
			g := New()
			if err := g.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
				b.Fatal(err)
			}
		}
	})
}
