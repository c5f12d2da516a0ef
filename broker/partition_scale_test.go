package broker

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestManyPartitionsSmallFileCache: a broker whose segment file cache holds 8 segments
// (24 descriptors) serves 24 partitions of several segments each: every record produced
// reads back, in order, and the cache closes what it does not use.
func TestManyPartitionsSmallFileCache(t *testing.T) {
	const partitions, perPartition, capacity = 24, 12, 8
	b := startTestBroker(t, "", map[string]string{openSegmentFilesProperty: fmt.Sprint(capacity * 3)})
	if st := b.segFiles.Stats(); st.Capacity != capacity {
		t.Fatalf("cache capacity %d, want %d", st.Capacity, capacity)
	}
	segBytes := "2048"
	mustCreateTopic(t, newAdmin(t, b), "many", partitions, map[string]*string{"segment.bytes": &segBytes})
	cl := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx := testContext(t)
	value := make([]byte, 600)
	rand.Read(value) // incompressible
	for i := 0; i < perPartition; i++ {
		var recs []*kgo.Record
		for p := int32(0); p < partitions; p++ {
			v := append([]byte(fmt.Sprintf("%d-%d-", p, i)), value...)
			recs = append(recs, &kgo.Record{Topic: "many", Partition: p, Value: v})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for p := int32(0); p < partitions; p++ {
		var n int
		b.partitions.get("many", p).WithLog(func(l *segment.Log) error { n = len(l.Segments()); return nil })
		if n < 3 {
			t.Fatalf("partition %d has %d segments; the test needs several", p, n)
		}
	}
	consumer := newClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"many": allFromStart(partitions)}))
	next := make([]int, partitions)
	for got := 0; got < partitions*perPartition; {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", got, partitions*perPartition, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			want := fmt.Sprintf("%d-%d-", r.Partition, next[r.Partition])
			if string(r.Value[:len(want)]) != want || r.Offset != int64(next[r.Partition]) {
				t.Fatalf("partition %d offset %d: value %q, want prefix %q", r.Partition, r.Offset, r.Value[:len(want)], want)
			}
			next[r.Partition]++
			got++
		})
	}
	// Offsets by timestamp look up the time indexes of reopened segments.
	offs, err := kadm.NewClient(cl).ListEndOffsets(ctx, "many")
	if err != nil {
		t.Fatal(err)
	}
	offs.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset != perPartition {
			t.Fatalf("end offset of %d: %d %v", o.Partition, o.Offset, o.Err)
		}
	})
	st := b.segFiles.Stats()
	if st.Evicts == 0 || st.Opens == 0 {
		t.Fatalf("the cache never closed and reopened a segment: %+v", st)
	}
	deadline := time.Now().Add(10 * time.Second)
	for b.segFiles.Stats().Open > capacity {
		if time.Now().After(deadline) {
			t.Fatalf("segments left open over capacity: %+v", b.segFiles.Stats())
		}
		time.Sleep(20 * time.Millisecond) // polling a state with a deadline
	}
}

func allFromStart(partitions int32) map[int32]kgo.Offset {
	m := map[int32]kgo.Offset{}
	for p := int32(0); p < partitions; p++ {
		m[p] = kgo.NewOffset().AtStart()
	}
	return m
}

// BenchmarkIdleReplicaHeap reports the Go heap one idle, empty replica costs: a broker
// opens 5,000 partitions (replication factor 1), and the heap after GC is compared with
// before; it also reports the segments left open and the goroutines added. Run with
// -benchtime=1x.
func BenchmarkIdleReplicaHeap(b *testing.B) {
	const partitions = 5000
	runtime.MemProfileRate = 512
	for i := 0; i < b.N; i++ {
		br := startTestBroker(b, "", map[string]string{"petrel.metrics.per.partition.enable": "false"})
		adm := newAdmin(b, br)
		if _, err := adm.ListBrokers(context.Background()); err != nil { // connected before counting goroutines
			b.Fatal(err)
		}
		before, goroutines := heapAfterGC(), runtime.NumGoroutine()
		mustCreateTopic(b, adm, fmt.Sprintf("idle-%d", i), partitions, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		for len(br.partitions.all()) < partitions {
			if ctx.Err() != nil {
				b.Fatalf("%d of %d replicas open", len(br.partitions.all()), partitions)
			}
			time.Sleep(50 * time.Millisecond)
		}
		cancel()
		after := heapAfterGC()
		if path := os.Getenv("PETREL_HEAP_PROFILE"); path != "" { // the replicas' heap, for pprof
			if f, err := os.Create(path); err == nil {
				pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
			}
		}
		b.ReportMetric(float64(after-before)/partitions, "heap-B/replica")
		b.ReportMetric(float64(br.segFiles.Stats().Open), "open-segments")
		// An idle replica runs no goroutine of its own (retention, flush and checkpoints
		// are the broker's maintenance loop; followers share a fetcher per leader).
		b.ReportMetric(float64(runtime.NumGoroutine()-goroutines), "goroutines-added")
	}
}

func heapAfterGC() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkReplicaRestart reports the time a broker with 2,000 idle, empty replicas
// (replication factor 1) takes from Start to ready (every replica opened and given its
// role) after a clean shutdown: the restart path of partition scale. Run with
// -benchtime=3x; PETREL_CPU_PROFILE=file profiles the restarts (and the clean stops
// between them) only. µs/replica divides the whole start (Raft election included) by the
// replicas; recovery-µs/replica is the "broker ready" line's replica_recovery.
func BenchmarkReplicaRestart(b *testing.B) {
	const partitions = 2000
	dir := b.TempDir()
	props := map[string]string{"petrel.metrics.per.partition.enable": "false"}
	br := startTestBroker(b, dir, props)
	mustCreateTopic(b, newAdmin(b, br), "restart", partitions, nil)
	waitReplicas(b, br, partitions)
	if err := br.Shutdown(context.Background()); err != nil {
		b.Fatal(err)
	}
	if path := os.Getenv("PETREL_CPU_PROFILE"); path != "" { // the restarts only, for pprof
		if f, err := os.Create(path); err == nil && pprof.StartCPUProfile(f) == nil {
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
	}
	b.ResetTimer()
	var recovery time.Duration
	for i := 0; i < b.N; i++ {
		br := startTestBroker(b, dir, props)
		b.StopTimer()
		if n := len(br.partitions.all()); n != partitions {
			b.Fatalf("%d of %d replicas open at ready", n, partitions)
		}
		recovery += br.readyTimes.recovery
		b.ReportMetric(float64(br.segFiles.Stats().Open), "open-segments")
		if err := br.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*partitions), "µs/replica")
	// The replica_recovery of the "broker ready" line (after the metadata catch-up, which
	// on one node is mostly the Raft election): opening the replicas and their roles.
	b.ReportMetric(float64(recovery.Microseconds())/float64(b.N*partitions), "recovery-µs/replica")
}

func waitReplicas(b testing.TB, br *Broker, partitions int) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	for len(br.partitions.all()) < partitions {
		if ctx.Err() != nil {
			b.Fatalf("%d of %d replicas open", len(br.partitions.all()), partitions)
		}
		time.Sleep(50 * time.Millisecond) // polling a state with a deadline
	}
}

// TestRestartLeavesIdleReplicasClosed: neither new replicas nor, after a clean restart,
// idle ones keep a segment file open (segment's TestCleanOpenOfIdleLogOpensNoFiles
// shows the empty ones are not even opened); the records of the replica with data read
// back, and the empty replicas take produce requests again.
func TestRestartLeavesIdleReplicasClosed(t *testing.T) {
	const partitions = 12
	dir := t.TempDir()
	b := startTestBroker(t, dir, nil)
	mustCreateTopic(t, newAdmin(t, b), "idle", partitions, nil)
	if st := b.segFiles.Stats(); st.Open != 0 {
		t.Fatalf("%d segments open after creating idle replicas", st.Open)
	}
	prod := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := testContext(t)
	for i := 0; i < 5; i++ {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "idle", Partition: 0, Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	prod.Close()
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	b2 := startTestBroker(t, dir, nil)
	if n := len(b2.partitions.all()); n != partitions {
		t.Fatalf("%d of %d replicas open at ready", n, partitions)
	}
	if st := b2.segFiles.Stats(); st.Open != 0 {
		t.Fatalf("%d segments open after a clean restart with idle replicas", st.Open)
	}
	cl := newClient(t, b2, kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"idle": {0: kgo.NewOffset().AtStart()}}))
	for got := 0; got < 5; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of 5 records after the restart: %v", got, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatal(err) })
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) != fmt.Sprint(got) || r.Offset != int64(got) {
				t.Fatalf("record %d: offset %d value %q", got, r.Offset, r.Value)
			}
			got++
		})
	}
	for p := int32(1); p < partitions; p++ {
		r := cl.ProduceSync(ctx, &kgo.Record{Topic: "idle", Partition: p, Value: []byte("after")})
		rec, err := r.First()
		if err != nil {
			t.Fatalf("produce to idle partition %d after the restart: %v", p, err)
		}
		if rec.Offset != 0 {
			t.Fatalf("produce to idle partition %d after the restart: offset %d, want 0", p, rec.Offset)
		}
	}
}
