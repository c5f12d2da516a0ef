package broker

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// BenchmarkCleanShutdown times a one-node clean shutdown of 5,000 replicas, 100 of
// them with records (what replicas_closed is on a node of a large cluster), with the
// process's CPU time (user+system, every goroutine) per shutdown; the start before each
// is not timed.
func BenchmarkCleanShutdown(b *testing.B) {
	const partitions = 5000
	dir := b.TempDir()
	props := map[string]string{"petrel.metrics.per.partition.enable": "false"}
	br := startTestBroker(b, dir, props)
	mustCreateTopic(b, newAdmin(b, br), "close", partitions, nil)
	waitReplicas(b, br, partitions)
	for p := range int32(100) {
		if _, err := br.partitions.get("close", p).AppendAsLeader(rvBatch(rvGoodSection(1, 100, false, 0), 1, 0), 0); err != nil {
			b.Fatal(err)
		}
	}
	if err := br.Shutdown(context.Background()); err != nil {
		b.Fatal(err)
	}
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	var spent time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		br := startTestBroker(b, dir, props)
		for p := range int32(100) { // records again, so that there is something to flush
			if _, err := br.partitions.get("close", p).AppendAsLeader(rvBatch(rvGoodSection(1, 100, false, 0), 1, 0), 0); err != nil {
				b.Fatal(err)
			}
		}
		c0 := cpu()
		b.StartTimer()
		if err := br.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		spent += cpu() - c0
		b.StartTimer()
	}
	b.ReportMetric(float64(spent.Milliseconds())/float64(b.N), "cpu-ms/op")
}
