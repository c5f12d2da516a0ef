package cli

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestProducers_Describe(t *testing.T) {
	b := startBroker(t, nil)
	bs := bootstrap(b)
	mustRun(t, "", "topics", "create", bs, "--partitions", "1", "idem")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr().String()), kgo.DefaultProduceTopic("idem")) // idempotent by default
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 3 {
		if err := cl.ProduceSync(ctx, kgo.StringRecord("v")).FirstErr(); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	r := mustRun(t, "", "producers", "describe", bs, "--topic", "idem", "--partition", "0")
	want := regexp.MustCompile(`^ProducerId +ProducerEpoch +LatestCoordinatorEpoch +LastSequence +LastTimestamp +CurrentTransactionStartOffset\n` +
		`0 +0 +-1 +2 +\d{13} +-1\n$`)
	if !want.MatchString(r.stdout) {
		t.Fatalf("describe output %q", r.stdout)
	}
	mustFail(t, "UNKNOWN_TOPIC_OR_PARTITION", "", "producers", "describe", bs, "--topic", "idem", "--partition", "7")
	mustFail(t, "--partition must be", "", "producers", "describe", bs, "--topic", "idem", "--partition", "-1")
}
