package cli

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/twmb/franz-go/pkg/kadm"
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

// TestTop_ScreenShowsBrokersAndQuits drives the interactive view on a simulated
// terminal: the broker table appears with the broker's row, and q quits.
func TestTop_ScreenShowsBrokersAndQuits(t *testing.T) {
	b := startBroker(t, nil)
	cl, err := newTestKafkaClient(b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	screen := tcell.NewSimulationScreen("UTF-8")
	src := &topSource{adm: kadm.NewClient(cl), explicit: []string{b.MetricsAddr().String()}, timeout: 10 * time.Second,
		http: &http.Client{Timeout: 5 * time.Second}}
	ui := newTopUI(src, 100*time.Millisecond, 5, screen) // initialises the screen
	screen.SetSize(120, 30)
	done := make(chan error, 1)
	go func() { done <- ui.run(context.Background()) }()
	addr := b.Addr().String()
	deadline := time.Now().Add(20 * time.Second)
	for {
		// The simulated screen's cells are read on the application's goroutine, the
		// one that draws them.
		got := make(chan string, 1)
		ui.app.QueueUpdate(func() {
			cells, w, _ := screen.GetContents()
			var sb strings.Builder
			for i, c := range cells {
				if i%w == 0 {
					sb.WriteByte('\n')
				}
				if len(c.Runes) > 0 {
					sb.WriteRune(c.Runes[0])
				} else {
					sb.WriteByte(' ')
				}
			}
			got <- sb.String()
		})
		var text string
		select {
		case text = <-got:
		case <-time.After(10 * time.Second):
			t.Fatal("the view's event loop does not run")
		}
		if strings.Contains(text, "BROKER") && strings.Contains(text, addr) && strings.Contains(text, "yes") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the screen never showed broker %s ready:\n%s", addr, text)
		}
		time.Sleep(20 * time.Millisecond) // polling the simulated screen
	}
	screen.InjectKey(tcell.KeyRune, 'q', tcell.ModNone)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("q did not quit")
	}
}

func newTestKafkaClient(addr string) (*kgo.Client, error) {
	return kgo.NewClient(kgo.SeedBrokers(addr))
}
