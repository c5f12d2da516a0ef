package cli

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTop_OncePrintsTheClusterSnapshot runs `petrel top --once` while a producer writes
// to partition 0 of a topic: one broker row (the controller, ready, its partitions),
// and partition 0 first among the busiest partitions, with a rate.
func TestTop_OncePrintsTheClusterSnapshot(t *testing.T) {
	b := startBroker(t, nil)
	bs := bootstrap(b)
	mustRun(t, "", "topics", "create", bs, "--partitions", "2", "orders")
	produceEach(t, b.Addr().String(), "orders", 2, 20)

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // partition 0 keeps growing during top's sampling window
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			cl.Produce(ctx, &kgo.Record{Topic: "orders", Partition: 0, Value: []byte("v")}, nil)
			<-tick.C
		}
	}()
	r := mustRun(t, "", "top", "--once", bs, "--metrics", b.MetricsAddr().String(), "--interval", "500ms")
	cancel()
	wg.Wait()

	out := r.stdout
	lines := strings.Split(out, "\n")
	if !regexp.MustCompile(`^cluster \S+  controller 0  brokers 1  topics 1  partitions 2  under-replicated 0  offline 0$`).MatchString(lines[0]) {
		t.Errorf("summary line %q", lines[0])
	}
	if !regexp.MustCompile(`(?m)^BROKER +ADDRESS +CTRL +IN MB/s +OUT MB/s +REQ/s +PARTITIONS +LEADERS +URP +READY$`).MatchString(out) {
		t.Errorf("no broker header in\n%s", out)
	}
	// No group ran, so __consumer_offsets does not exist: the broker holds and leads
	// the topic's 2 partitions.
	addr := regexp.QuoteMeta(b.Addr().String())
	if !regexp.MustCompile(`(?m)^0 +` + addr + ` +\* +\d+\.\d\d +\d+\.\d\d +\d+ +2 +2 +0 +yes$`).MatchString(out) {
		t.Errorf("no broker row for node 0 in\n%s", out)
	}
	m := regexp.MustCompile(`(?m)^BUSIEST PARTITIONS\nTOPIC +PARTITION +LEADER +RECORDS/s +SIZE MB\norders +0 +0 +(\d+) +\d+\.\d\d\norders +1 +0 +0 +\d+\.\d\d$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("busiest partitions not as expected in\n%s", out)
	}
	if m[1] == "0" {
		t.Errorf("partition 0 grew at 0 records/s while produced to:\n%s", out)
	}
}

func TestTop_BadFlags(t *testing.T) {
	r := run(t, "", "top", "--once", "--metrics", "nohostport")
	if r.code == 0 || !strings.Contains(r.stderr, `bad --metrics "nohostport": want host:port`) {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	r = run(t, "", "top", "--once", "--interval", "0s")
	if r.code == 0 || !strings.Contains(r.stderr, "--interval must be positive") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}
