package cli

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestTransactions_ListDescribe(t *testing.T) {
	b := startBroker(t, nil)
	bs := bootstrap(b)
	mustRun(t, "", "topics", "create", bs, "--partitions", "1", "tx")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.DefaultProduceTopic("tx"), kgo.TransactionalID("cli-txn"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, kgo.StringRecord("v")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, "", "transactions", "list", bs)
	if !regexp.MustCompile(`^TransactionalId +Coordinator +ProducerId +TransactionState\ncli-txn +0 +\d+ +Ongoing\n$`).MatchString(r.stdout) {
		t.Fatalf("list output %q", r.stdout)
	}
	r = mustRun(t, "", "transactions", "describe", bs, "--transactional-id", "cli-txn")
	if !regexp.MustCompile(`(?s)^CoordinatorId +TransactionalId .*TopicPartitions\n0 +cli-txn +\d+ +0 +Ongoing +\d+ +\d{13} +\d+ +tx-0\n$`).MatchString(r.stdout) {
		t.Fatalf("describe output %q", r.stdout)
	}
	r = mustRun(t, "", "producers", "describe", bs, "--topic", "tx", "--partition", "0")
	if !regexp.MustCompile(`\n\d+ +0 +-1 +0 +\d{13} +0\n$`).MatchString(r.stdout) {
		t.Fatalf("describe producers with an open transaction %q", r.stdout)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	mustFail(t, "TRANSACTIONAL_ID_NOT_FOUND", "", "transactions", "describe", bs, "--transactional-id", "nope")
}
