package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Note: no test here calls t.Parallel. urfave/cli/v2 mutates package-level flags
// (cli.HelpFlag) in every App.Run, so runApp runs one command at a time in a process.

func TestProduceConsume_KeysAndOffsets(t *testing.T) {
	b := startBroker(t, nil)
	bs := bootstrap(b)
	mustRun(t, "", "topics", "create", bs, "--partitions", "2", "keyed")

	// The value keeps later separators: the split is at the first one.
	mustRun(t, lines("k1:v1", "k2:v2", "k3:v:3", ":empty-key"), "produce", bs, "--key-separator", ":", "--partition", "1", "keyed")
	r := mustRun(t, "", "consume", bs, "--from-beginning", "--print-key", "--print-offset", "--max-messages", "4", "keyed")
	want := "Offset:0\tk1\tv1\nOffset:1\tk2\tv2\nOffset:2\tk3\tv:3\nOffset:3\t\tempty-key\n"
	if r.stdout != want {
		t.Fatalf("consume output:\n got %q\nwant %q", r.stdout, want)
	}
	if !strings.Contains(r.stderr, "Processed a total of 4 messages") {
		t.Fatalf("stderr %q", r.stderr)
	}

	// Without --key-separator a line is a value with a null key; an empty line is an
	// empty value. A custom print separator joins the fields.
	mustRun(t, lines("plain", ""), "produce", bs, "--partition", "0", "keyed")
	r = mustRun(t, "", "consume", bs, "--partition", "0", "--offset", "earliest", "--print-key", "--print-partition",
		"--key-separator", " | ", "--max-messages", "2", "keyed")
	if want := "Partition:0 | null | plain\nPartition:0 | null | \n"; r.stdout != want {
		t.Fatalf("consume output:\n got %q\nwant %q", r.stdout, want)
	}
}

func TestProduce_MissingKeySeparatorNamesTheLine(t *testing.T) {
	b := startBroker(t, nil)
	bs := bootstrap(b)
	mustRun(t, "", "topics", "create", bs, "t")
	mustFail(t, `no key separator ":" found on line number 3: "no separator here"`,
		lines("a:1", "b:2", "no separator here", "c:3"), "produce", bs, "--key-separator", ":", "t")
	// The lines before the bad one were delivered; nothing after it.
	r := mustRun(t, "", "consume", bs, "--from-beginning", "--print-key", "--timeout-ms", "500", "t")
	if want := "a\t1\nb\t2\n"; r.stdout != want {
		t.Fatalf("consume output %q, want %q", r.stdout, want)
	}
}

func TestProduceConsume_CompressionAndAcks(t *testing.T) {
	b := startBroker(t, nil)
	bs := bootstrap(b)
	var input []string
	for i := range 200 {
		input = append(input, fmt.Sprintf("record-%03d %s", i, strings.Repeat("x", i%40)))
	}
	cases := []struct {
		compression, acks string
		codec             uint8 // the batch attribute kafka stores: 0 none ... 4 zstd
	}{
		{"none", "all", 0}, {"gzip", "1", 1}, {"snappy", "-1", 2}, {"lz4", "all", 3}, {"zstd", "1", 4}, {"gzip", "0", 1},
	}
	for _, tc := range cases {
		t.Run(tc.compression+"-acks"+tc.acks, func(t *testing.T) {
			topic := "c-" + tc.compression + "-" + strings.TrimPrefix(tc.acks, "-")
			mustRun(t, "", "topics", "create", bs, topic)
			mustRun(t, lines(input...), "produce", bs, "--compression", tc.compression, "--acks", tc.acks, topic)
			r := mustRun(t, "", "consume", bs, "--from-beginning", "--max-messages", "200", "--timeout-ms", "10000", topic)
			if r.stdout != lines(input...) {
				t.Fatalf("round trip through %s lost or changed records:\n got %d bytes\nwant %d bytes", tc.compression, len(r.stdout), len(lines(input...)))
			}
			// kgo sends a batch uncompressed when compressing would not shrink it (a
			// lone short record, as acks=0 often sends first), so codec 0 may appear
			// beside the requested one; any other codec is wrong.
			codecs := storedCodecs(t, b.Addr().String(), topic, len(input))
			if !codecs[tc.codec] || len(codecs) > 2 || (len(codecs) == 2 && !codecs[0]) {
				t.Fatalf("stored batches use codecs %v, want %d (--compression %s)", codecs, tc.codec, tc.compression)
			}
		})
	}
	mustFail(t, `bad --compression "brotli"`, "x\n", "produce", bs, "--compression", "brotli", "c-none-all")
	mustFail(t, `bad --acks "2"`, "x\n", "produce", bs, "--acks", "2", "c-none-all")
}

// storedCodecs reads the first n records of topic with a plain kgo client and returns
// the compression codecs of the batches that hold them.
func storedCodecs(t *testing.T, addr, topic string, n int) map[uint8]bool {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	codecs := map[uint8]bool{}
	for seen := 0; seen < n; {
		fetches := cl.PollRecords(ctx, n-seen)
		if err := fetches.Err(); err != nil {
			t.Fatal(err)
		}
		for _, r := range fetches.Records() {
			codecs[r.Attrs.CompressionType()] = true
			seen++
		}
	}
	return codecs
}

func TestConsume_PartitionAndOffset(t *testing.T) {
	b := startBroker(t, nil)
	bs := bootstrap(b)
	mustRun(t, "", "topics", "create", bs, "--partitions", "3", "p")
	mustRun(t, lines("a", "b", "c", "d", "e"), "produce", bs, "--partition", "2", "p")
	mustRun(t, lines("other"), "produce", bs, "--partition", "0", "p")

	r := mustRun(t, "", "consume", bs, "--partition", "2", "--offset", "2", "--print-offset", "--max-messages", "3", "p")
	if want := "Offset:2\tc\nOffset:3\td\nOffset:4\te\n"; r.stdout != want {
		t.Fatalf("--offset 2:\n got %q\nwant %q", r.stdout, want)
	}
	r = mustRun(t, "", "consume", bs, "p", "--partition", "2", "--from-beginning", "--timeout-ms", "500")
	if want := lines("a", "b", "c", "d", "e"); r.stdout != want {
		t.Fatalf("--from-beginning on partition 2:\n got %q\nwant %q", r.stdout, want)
	}
	// An offset past the end resets to the end (auto.offset.reset=latest), as
	// kafka-console-consumer.sh does without --from-beginning.
	r = mustRun(t, "", "consume", bs, "--partition", "2", "--offset", "100", "--timeout-ms", "300", "p")
	if r.stdout != "" {
		t.Fatalf("--offset past the end printed %q", r.stdout)
	}
	// The default start is the end: nothing old is printed.
	r = mustRun(t, "", "consume", bs, "--timeout-ms", "300", "p")
	if r.stdout != "" || !strings.Contains(r.stderr, "Processed a total of 0 messages") {
		t.Fatalf("consume from latest printed %q, stderr %q", r.stdout, r.stderr)
	}
	r = mustRun(t, "", "consume", bs, "--partition", "2", "--offset", "latest", "--timeout-ms", "300", "p")
	if r.stdout != "" {
		t.Fatalf("--offset latest printed %q", r.stdout)
	}
	// All partitions from the beginning: every record once, in per-partition order.
	r = mustRun(t, "", "consume", bs, "--from-beginning", "--max-messages", "6", "p")
	var fromTwo []string
	for _, l := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		if l != "other" {
			fromTwo = append(fromTwo, l)
		}
	}
	if strings.Count(r.stdout, "\n") != 6 || !strings.Contains(r.stdout, "other\n") || strings.Join(fromTwo, ",") != "a,b,c,d,e" {
		t.Fatalf("consume all partitions: %q", r.stdout)
	}

	mustFail(t, "--offset needs --partition", "", "consume", bs, "--offset", "1", "p")
	mustFail(t, "--from-beginning and --offset cannot be used together", "", "consume", bs, "--partition", "0", "--offset", "1", "--from-beginning", "p")
	mustFail(t, `bad --offset "soon"`, "", "consume", bs, "--partition", "0", "--offset", "soon", "p")
	mustFail(t, `partition 3 does not exist: topic "p" has 3 partitions`, "", "consume", bs, "--partition", "3", "p")
	mustFail(t, `partition 7 does not exist`, "x\n", "produce", bs, "--partition", "7", "p")
	mustFail(t, `topic "missing" does not exist`, "", "consume", bs, "missing")
}

func TestProduce_MissingTopicWithoutAutoCreate(t *testing.T) {
	b := startBroker(t, map[string]string{"auto.create.topics.enable": "false"})
	bs := bootstrap(b)
	r := mustFail(t, `topic "ghost" does not exist`, lines("a", "b"), "produce", bs, "ghost")
	if r.took > 5*time.Second {
		t.Fatalf("failing took %s", r.took)
	}
	if r := mustRun(t, "", "topics", "list", bs); r.stdout != "" {
		t.Fatalf("topics after a refused produce: %q", r.stdout)
	}
	mustFail(t, `does not exist`, "", "perf", "produce", bs, "--records", "10", "ghost")
}

func TestProduce_AutoCreatesTopicWhenAllowed(t *testing.T) {
	b := startBroker(t, nil) // auto.create.topics.enable defaults to true, as in Kafka
	bs := bootstrap(b)
	mustRun(t, lines("first"), "produce", bs, "fresh")
	r := mustRun(t, "", "consume", bs, "--from-beginning", "--max-messages", "1", "fresh")
	if r.stdout != "first\n" {
		t.Fatalf("consume output %q", r.stdout)
	}
}

func TestConsume_PrintTimestamp(t *testing.T) {
	b := startBroker(t, nil)
	bs := bootstrap(b)
	mustRun(t, "", "topics", "create", bs, "ts")
	before := time.Now().UnixMilli()
	mustRun(t, lines("v"), "produce", bs, "ts")
	after := time.Now().UnixMilli()
	r := mustRun(t, "", "consume", bs, "--from-beginning", "--print-timestamp", "--print-offset", "--max-messages", "1", "ts")
	var ts int64
	if _, err := fmt.Sscanf(r.stdout, "CreateTime:%d\tOffset:0\tv\n", &ts); err != nil {
		t.Fatalf("output %q: %v", r.stdout, err)
	}
	if ts < before || ts > after {
		t.Fatalf("timestamp %d not within [%d, %d]", ts, before, after)
	}
}
