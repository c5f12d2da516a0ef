package cli

import (
	"context"
	"math"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTop_OncePrintsTheClusterSnapshot runs `petrel top --once` while a producer writes
// to partition 0 of a topic and a group lags behind: one broker row (the controller,
// up, its leaders and partitions), the group's lag, and partition 0 among the busiest
// partitions with a rate; every line fits 80 columns.
func TestTop_OncePrintsTheClusterSnapshot(t *testing.T) {
	b := startBroker(t, nil)
	bs := bootstrap(b)
	mustRun(t, "", "topics", "create", bs, "--partitions", "2", "orders")
	produceEach(t, b.Addr().String(), "orders", 2, 20)
	// A group that read 2 records and left, committing them: it lags behind.
	mustRun(t, "", "consume", bs, "orders", "--group", "billing", "--from-beginning", "--max-messages", "2")

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
	assertFits80(t, out)
	lines := strings.Split(out, "\n")
	if !regexp.MustCompile(`^cluster \S+  controller 0  brokers 1$`).MatchString(lines[0]) {
		t.Errorf("summary line %q", lines[0])
	}
	// __consumer_offsets (50 partitions) counts as a topic and in the partitions.
	if lines[1] != "topics 2, partitions 52 (50 internal), under-replicated 0, offline 0" {
		t.Errorf("second summary line %q", lines[1])
	}
	if !regexp.MustCompile(`(?m)^ID  ADDRESS +STATE  IN/s  OUT/s  REQ/s  LEADERS  URP  PRODUCE  FETCH$`).MatchString(out) {
		t.Errorf("no broker header in\n%s", out)
	}
	// The broker holds and leads the topic's 2 partitions and __consumer_offsets' 50, all
	// counted; produce requests ran in the window, so there is a p99.
	addr := regexp.QuoteMeta(b.Addr().String())
	if !regexp.MustCompile(`(?m)^0\* +` + addr + ` +up +\S+ +\S+ +\d+ +52/52 +0 +\d+(\.\d)?m?s +\S+$`).MatchString(out) {
		t.Errorf("no broker row for node 0 in\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^CONSUMER GROUPS\nGROUP +LAG +COORDINATOR\nbilling +[1-9]\d* +0$`).MatchString(out) {
		t.Errorf("no lag of group billing in\n%s", out)
	}
	m := regexp.MustCompile(`(?m)^BUSIEST PARTITIONS\nTOPIC +PARTITION +LEADER +RECORDS/s +SIZE MB\norders +0 +0 +(\d+) +\d+\.\d\d$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("busiest partitions not as expected in\n%s", out)
	}
	if m[1] == "0" {
		t.Errorf("partition 0 grew at 0 records/s while produced to:\n%s", out)
	}
}

// assertFits80 fails for any line wider than 80 columns.
func assertFits80(t *testing.T, out string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if n := displayWidth(l); n > 80 {
			t.Errorf("line of %d columns: %q", n, l)
		}
	}
}

func TestTop_BadFlags(t *testing.T) {
	mustFail(t, `bad --metrics "nohostport": want host:port`, "", "top", "--once", "--metrics", "nohostport")
	mustFail(t, "--interval must be positive", "", "top", "--once", "--interval", "0s")
}

// Without a terminal the screen cannot start: one line saying so (it used to be tcell's
// "open /dev/tty").
func TestTop_WithoutTerminal(t *testing.T) {
	r := mustFail(t, "needs a terminal; use --once", "", "top", "--bootstrap-server", closedPort(t))
	if strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("stderr is not one line: %q", r.stderr)
	}
}

// TestTop_ScreenFits80Columns drives the interactive view on a simulated 80x24
// terminal: the broker table appears whole (the last column's header, the broker's
// state) and q quits.
func TestTop_ScreenFits80Columns(t *testing.T) {
	b := startBroker(t, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	screen := tcell.NewSimulationScreen("UTF-8")
	src := newTopSource(cl, []string{b.MetricsAddr().String()}, 10*time.Second)
	ui := newTopUI(src, 100*time.Millisecond, topLimits{partitions: 5, groups: 5}, screen) // initialises the screen
	screen.SetSize(80, 24)
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
		if regexp.MustCompile(`ID +ADDRESS +STATE +IN/s +OUT/s +REQ/s +LEADERS +URP +PRODUCE +FETCH`).MatchString(text) &&
			regexp.MustCompile(`0\* +`+regexp.QuoteMeta(addr)+` +up +`).MatchString(text) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the 80-column screen never showed broker %s up with every column:\n%s", addr, text)
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

// The view from synthetic samples: a fenced broker and one that vanished from the
// cluster are DOWN, not left out; internal partitions count everywhere; latency p99
// comes from the histograms' growth between the samples.
func TestBuildTopView_DownBrokersAndCounts(t *testing.T) {
	partition := func(p, leader int32, replicas, isr []int32) kmsg.MetadataResponseTopicPartition {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition, mp.Leader, mp.Replicas, mp.ISR = p, leader, replicas, isr
		return mp
	}
	hist := func(counts ...uint64) histogram {
		return histogram{bounds: []float64{1, 10, 100, math.Inf(1)}, counts: counts, count: counts[len(counts)-1]}
	}
	scrape := func(in uint64, produce histogram) *brokerScrape {
		return &brokerScrape{bytesIn: float64(in), partitions: 2, leaders: 1, ready: true,
			latency: map[string]histogram{"Produce": produce}, groupLag: map[string]float64{"billing": 7}}
	}
	at := time.Unix(100, 0)
	sample := func(at time.Time, in uint64, produce histogram) *topSample {
		return &topSample{at: at, clusterID: "c1", controller: 0,
			brokers: map[int32]*topBroker{
				0: {id: 0, address: "127.0.0.1:9092", registered: true},
				1: {id: 1, address: "127.0.0.1:9094", registered: true, fenced: true},
				2: {id: 2, address: "127.0.0.1:9096"}, // seen before, no longer registered
			},
			topics: []topTopic{
				{name: "orders", partitions: []kmsg.MetadataResponseTopicPartition{partition(0, 0, []int32{0, 1}, []int32{0})}},
				{name: "__consumer_offsets", internal: true, partitions: []kmsg.MetadataResponseTopicPartition{
					partition(0, 0, []int32{0, 1}, []int32{0}), partition(1, -1, []int32{2}, []int32{2})}},
			},
			scrapes: map[int32]*brokerScrape{0: scrape(in, produce)}}
	}
	// 100 produce requests between the samples, all between 10 and 100 ms: p99 99.1 ms.
	v := buildTopView(sample(at, 1000, hist(0, 10, 10, 10)), sample(at.Add(time.Second), 3000, hist(0, 10, 110, 110)),
		topLimits{partitions: 5, groups: 5})
	var out strings.Builder
	if err := printTop(&out, v); err != nil {
		t.Fatal(err)
	}
	assertFits80(t, out.String())
	want := "cluster c1  controller 0  brokers 3 (2 down)\n" +
		"topics 2, partitions 3 (2 internal), under-replicated 2, offline 1\n" +
		"\n" +
		"BROKERS  per second; LEADERS: led/hosted; PRODUCE, FETCH: p99 request time\n" +
		"ID  ADDRESS         STATE  IN/s  OUT/s  REQ/s  LEADERS  URP  PRODUCE  FETCH\n" +
		"0*  127.0.0.1:9092  up       2K      0      0      1/2    0     99ms      -\n" +
		"1   127.0.0.1:9094  DOWN      -      -      -        -    -        -      -\n" +
		"2   127.0.0.1:9096  DOWN      -      -      -        -    -        -      -\n" +
		"\n" +
		"CONSUMER GROUPS\n" +
		"GROUP    LAG  COORDINATOR\n" +
		"billing    7            0\n" +
		"\n" +
		"BUSIEST PARTITIONS\n" +
		"TOPIC  PARTITION  LEADER  RECORDS/s  SIZE MB\n"
	if out.String() != want {
		t.Fatalf("view:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestQuantileBetween(t *testing.T) {
	bounds := []float64{1, 10, 100, math.Inf(1)}
	h := func(c ...uint64) histogram { return histogram{bounds: bounds, counts: c, count: c[len(c)-1]} }
	cases := []struct {
		name      string
		prev, cur histogram
		want      float64
	}{
		{"nothing new", h(5, 5, 5, 5), h(5, 5, 5, 5), math.NaN()},
		{"all in the first bucket", histogram{}, h(100, 100, 100, 100), 0.99},
		{"in between: the second bucket", h(100, 100, 100, 100), h(100, 200, 200, 200), 1 + 9*0.99},
		{"above the last finite bound", h(0, 0, 0, 0), h(0, 0, 0, 10), 100},
	}
	for _, tc := range cases {
		got := quantileBetween(tc.prev, tc.cur, 0.99)
		if !(math.IsNaN(got) && math.IsNaN(tc.want)) && math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	for in, want := range map[float64]string{math.NaN(): "-", 0.44: "0.4ms", 2.5: "2.5ms", 250: "250ms", 1234: "1.2s"} {
		if got := formatMillis(in); got != want {
			t.Errorf("formatMillis(%v) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[float64]string{512: "512", 950e3: "950K", 2.1e6: "2.1M", 123e6: "123M", 1.2e9: "1.2G"} {
		if got := formatBytes(in); got != want {
			t.Errorf("formatBytes(%v) = %q, want %q", in, got, want)
		}
	}
	if got := shortAddress("broker-17.kafka.example.com:9092"); displayWidth(got) != 17 || !strings.HasSuffix(got, ":9092") {
		t.Errorf("shortAddress: %q", got)
	}
}
