package broker

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/replication"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// processCPU is this process's user and system CPU time so far.
func processCPU(t testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestReplicaVerificationCost measures what continuous replica verification costs at
// PETREL_VERIFY_COST partitions (10,000 in docs/benchmarks.md), RF 2 on two brokers in
// this process, one record each: the process's CPU time over a window with
// verification off, then over as long a window of back-to-back passes on both brokers
// (each pass compares every followed partition). Skipped unless PETREL_VERIFY_COST is
// set: it creates thousands of replicas.
func TestReplicaVerificationCost(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("PETREL_VERIFY_COST"))
	if n <= 0 {
		t.Skip("set PETREL_VERIFY_COST=10000 to measure")
	}
	window := 30 * time.Second
	c := startTestCluster(t, 2, 2, map[string]string{"petrel.replica.verification.enable": "false"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Two topics: one CreateTopics may not write more than 10,000 metadata records.
	topics := []string{"cost-a", "cost-b"}
	for _, topic := range topics {
		if _, err := kadm.NewClient(cl).CreateTopic(ctx, int32(n/2), 2, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	n = n / 2 * 2
	testwait.ForWhat(t, 5*time.Minute, "every replica open", func() error {
		for i, b := range c.brokers {
			if got := len(b.partitions.all()); got < n {
				return fmt.Errorf("node %d has %d replicas", i, got)
			}
		}
		return nil
	})
	var recs []*kgo.Record
	for _, topic := range topics {
		for p := range n / 2 {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Value: []byte(fmt.Sprintf("record of partition %d", p))})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	testwait.ForWhat(t, 5*time.Minute, "every follower at HW 1", func() error {
		for i, b := range c.brokers {
			for _, lp := range b.partitions.all() {
				if st := lp.State(); st.HighWatermark != 1 {
					return fmt.Errorf("node %d: %s-%d role %v HW %d", i, lp.Topic, lp.ID, st.Role, st.HighWatermark)
				}
			}
		}
		return nil
	})
	followed := 0
	for _, b := range c.brokers {
		for _, lp := range b.partitions.all() {
			if lp.State().Role == replication.Follower {
				followed++
			}
		}
	}

	measure := func(during func(deadline time.Time)) time.Duration {
		start := processCPU(t)
		during(time.Now().Add(window))
		return processCPU(t) - start
	}
	off := measure(func(deadline time.Time) {
		idle := time.NewTimer(time.Until(deadline)) // a measuring window, not a wait for an event
		defer idle.Stop()
		<-idle.C
	})
	passes := 0
	verifiers := []*replicaVerifier{newReplicaVerifier(c.brokers[0]), newReplicaVerifier(c.brokers[1])}
	on := measure(func(deadline time.Time) {
		for time.Now().Before(deadline) {
			for _, v := range verifiers {
				v.pass(ctx)
			}
			passes++
		}
	})
	for _, v := range verifiers {
		v.mu.Lock()
		if len(v.divergent) > 0 {
			t.Errorf("divergences on a healthy cluster: %v", v.divergent)
		}
		v.mu.Unlock()
	}
	perMin := func(d time.Duration) float64 { return d.Seconds() * float64(time.Minute) / float64(window) }
	perPass := (on - off).Seconds() / float64(max(passes, 1))
	load, _ := os.ReadFile("/proc/loadavg")
	t.Logf("replica verification at %d partitions (%d followed replicas on 2 brokers), %s windows: "+
		"off %.2f CPU-s/min, on (passes back to back) %.2f CPU-s/min, %d passes, %.3f CPU-s a pass over both brokers; "+
		"at the default interval (300 s) %.3f%% of a core, at 60 s %.3f%%; load average %s",
		n, followed, window, perMin(off), perMin(on), passes, perPass, 100*perPass/300, 100*perPass/60, load)
}
