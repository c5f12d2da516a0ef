package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTransactionsAbortCLI leaves a transaction hanging (a producer with a long
// transaction timeout begins, writes and goes away without EndTxn): a read_committed
// consumer is blocked at the last stable offset; `petrel transactions find-hanging`
// lists it; `petrel transactions abort --start-offset` unblocks the consumer. A second
// hanging transaction is aborted by --producer-id, --producer-epoch and
// --coordinator-epoch.
func TestTransactionsAbortCLI(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1, txnOptions()...)
	const topic = "hang"
	c.CreateTopic(t, topic, 1, nil)
	ctx := testContext(t)
	bs := "--bootstrap-server=" + strings.Join(c.Addrs(), ",")
	adm := kadm.NewClient(c.Client(t))
	hang := func(id string) {
		t.Helper()
		p, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.TransactionalID(id), kgo.TransactionTimeout(10*time.Minute),
			kgo.DefaultProduceTopic(topic), kgo.WithLogger(nil))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := p.ProduceSync(ctx, kgo.StringRecord(id)).FirstErr(); err != nil {
			t.Fatalf("produce in %s's transaction: %v", id, err)
		}
		p.Close() // gone without EndTxn
	}
	lastStable := func() int64 {
		t.Helper()
		offs, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		o, _ := offs.Lookup(topic, 0)
		return o.Offset
	}
	hang("hanging-1") // offset 0
	if err := c.Client(t, kgo.DefaultProduceTopic(topic)).ProduceSync(ctx, kgo.StringRecord("after")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if lso := lastStable(); lso != 0 {
		t.Fatalf("last stable offset with a hanging transaction at 0: %d", lso)
	}
	consumer := c.Client(t, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	pollFor := func(d time.Duration) []string {
		var got []string
		for deadline := time.Now().Add(d); time.Now().Before(deadline); {
			pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			consumer.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
			cancel()
			if len(got) > 0 {
				break
			}
		}
		return got
	}
	if got := pollFor(time.Second); len(got) != 0 {
		t.Fatalf("read_committed read %q past a hanging transaction", got)
	}

	code, out, stderr := petrel("transactions", "find-hanging", bs, "--topic", topic)
	if code != 0 || strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, "Topic ") {
		t.Fatalf("find-hanging with the 15-minute default: exit %d, %q, %q", code, out, stderr)
	}
	for _, args := range [][]string{{"--topic", topic, "--partition", "0"}, {"--broker-id", "0"}} {
		code, out, stderr = petrel(append([]string{"transactions", "find-hanging", bs, "--max-transaction-timeout", "0"}, args...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "Topic ") || !strings.Contains(lines[0], "Duration(min)") ||
			!strings.HasPrefix(lines[1], "hang ") || strings.Fields(lines[1])[5] != "0" {
			t.Fatalf("find-hanging %v: exit %d, %q, %q", args, code, out, stderr)
		}
		t.Logf("petrel transactions find-hanging %v:\n%s", args, out)
	}

	if code, _, stderr := petrel("transactions", "abort", bs, "--topic", topic, "--partition", "0", "--start-offset", "1"); code == 0 ||
		!strings.Contains(stderr, "could not find any open transactions starting at offset 1 on partition hang-0") {
		t.Fatalf("abort at an offset no transaction starts at: exit %d, %q", code, stderr)
	}
	if code, _, stderr := petrel("transactions", "abort", bs, "--topic", topic, "--partition", "0"); code == 0 || !strings.Contains(stderr, "--start-offset") {
		t.Fatalf("abort without a transaction: exit %d, %q", code, stderr)
	}
	code, out, stderr = petrel("transactions", "abort", bs, "--topic", topic, "--partition", "0", "--start-offset", "0")
	if code != 0 || !strings.Contains(out, "Aborted the transaction of producer") {
		t.Fatalf("abort --start-offset 0: exit %d, %q, %q", code, out, stderr)
	}
	if got := pollFor(groupWait); len(got) != 1 || got[0] != "after" {
		t.Fatalf("read_committed after the abort: %q, want [after]", got)
	}

	hang("hanging-2") // offset 3, after the abort marker at 2
	if lso := lastStable(); lso != 3 {
		t.Fatalf("last stable offset with a second hanging transaction at 3: %d", lso)
	}
	set := kadm.TopicsSet{}
	set.Add(topic, 0)
	described, err := adm.DescribeProducers(ctx, set)
	if err != nil {
		t.Fatal(err)
	}
	var open *kadm.DescribedProducer
	for _, pr := range described[topic].Partitions[0].ActiveProducers {
		if pr.CurrentTxnStartOffset == 3 {
			open = &pr
		}
	}
	if open == nil {
		t.Fatalf("no producer with an open transaction at 3: %+v", described[topic].Partitions[0].ActiveProducers)
	}
	code, out, stderr = petrel("transactions", "abort", bs, "--topic", topic, "--partition", "0", "--producer-id", fmt.Sprint(open.ProducerID),
		"--producer-epoch", fmt.Sprint(open.ProducerEpoch), "--coordinator-epoch", "0")
	if code != 0 {
		t.Fatalf("abort --producer-id: exit %d, %q, %q", code, out, stderr)
	}
	testwait.For(t, groupWait, func() error {
		if lso := lastStable(); lso != 5 {
			return fmt.Errorf("last stable offset %d after the second abort, want 5", lso)
		}
		return nil
	})
}
