package integration

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// throttleHook records the largest throttle a client was told.
type throttleHook struct{ maxMs atomic.Int64 }

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	for {
		cur := h.maxMs.Load()
		if d.Milliseconds() <= cur || h.maxMs.CompareAndSwap(cur, d.Milliseconds()) {
			return
		}
	}
}

// TestQuotas_ByteRates: a client id limited to 1 MB/s (producer_byte_rate,
// stored through AlterClientQuotas and listed by DescribeClientQuotas) is told
// throttle_time_ms > 0 and produces 4 MiB at about that rate, not at loopback speed;
// a consumer limited by consumer_byte_rate (the default client id's quota) reads them
// back at about its rate too.
func TestQuotas_ByteRates(t *testing.T) {
	// Two one-second samples: the rate is measured over at least one second, so the
	// burst allowed before throttling is about one second's quota.
	c := StartCluster(t, 1, WithProperty("quota.window.num", "2"))
	ctx := testContext(t)
	c.CreateTopic(t, "q", 1, nil)

	const quota = 1 << 20
	alter := kmsg.NewPtrAlterClientQuotasRequest()
	entry := kmsg.NewAlterClientQuotasRequestEntry()
	en := kmsg.NewAlterClientQuotasRequestEntryEntity()
	en.Type, en.Name = "client-id", kmsg.StringPtr("limited")
	entry.Entity = append(entry.Entity, en)
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value = "producer_byte_rate", quota
	entry.Ops = append(entry.Ops, op)
	alter.Entries = append(alter.Entries, entry)
	readers := kmsg.NewAlterClientQuotasRequestEntry()
	dflt := kmsg.NewAlterClientQuotasRequestEntryEntity()
	dflt.Type = "client-id" // the default client id
	readers.Entity = append(readers.Entity, dflt)
	rop := kmsg.NewAlterClientQuotasRequestEntryOp()
	rop.Key, rop.Value = "consumer_byte_rate", quota
	readers.Ops = append(readers.Ops, rop)
	alter.Entries = append(alter.Entries, readers)
	resp, err := alter.RequestWith(ctx, c.Client(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range resp.Entries {
		if err := kerr.ErrorForCode(e.ErrorCode); err != nil {
			t.Fatal(err)
		}
	}
	describe := kmsg.NewPtrDescribeClientQuotasRequest()
	comp := kmsg.NewDescribeClientQuotasRequestComponent()
	comp.EntityType, comp.MatchType, comp.Match = "client-id", 0, kmsg.StringPtr("limited")
	describe.Components = append(describe.Components, comp)
	described, err := describe.RequestWith(ctx, c.Client(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(described.Entries) != 1 || len(described.Entries[0].Values) != 1 || described.Entries[0].Values[0].Value != quota {
		t.Fatalf("DescribeClientQuotas: %+v", described.Entries)
	}

	hook := &throttleHook{}
	cl := c.Client(t, kgo.ClientID("limited"), kgo.WithHooks(hook), kgo.ProducerLinger(0), kgo.ProducerBatchMaxBytes(128<<10))
	value := make([]byte, 64<<10) // random: compression must not shrink it
	_, _ = rand.NewChaCha8([32]byte{1}).Read(value)
	const total = 4 << 20
	start := time.Now()
	for range total / len(value) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "q", Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	rate := float64(total) / elapsed.Seconds()
	t.Logf("4 MiB in %s: %.0f bytes/s against a quota of %d; largest throttle %d ms", elapsed, rate, quota, hook.maxMs.Load())
	if hook.maxMs.Load() <= 0 {
		t.Error("no response carried throttle_time_ms")
	}
	// Generous bounds: the burst of the first window lets the rate exceed the quota
	// somewhat; loopback speed would be tens of MB/s.
	if rate > 2.5*quota || rate < 0.1*quota {
		t.Errorf("produced at %.0f bytes/s, want about %d", rate, quota)
	}

	// The consumer: the default client id's consumer_byte_rate of 1 MB/s.
	readHook := &throttleHook{}
	consumer := c.Client(t, kgo.ClientID("reader"), kgo.WithHooks(readHook), kgo.ConsumeTopics("q"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxPartitionBytes(256<<10), kgo.FetchMaxBytes(256<<10))
	start = time.Now()
	read := 0
	for read < total && ctx.Err() == nil {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { read += len(r.Value) })
	}
	elapsed = time.Since(start)
	rate = float64(read) / elapsed.Seconds()
	t.Logf("read %d bytes in %s: %.0f bytes/s against a quota of %d; largest throttle %d ms", read, elapsed, rate, quota, readHook.maxMs.Load())
	if readHook.maxMs.Load() <= 0 {
		t.Error("no fetch response carried throttle_time_ms")
	}
	if rate > 2.5*quota {
		t.Errorf("consumed at %.0f bytes/s, want about %d", rate, quota)
	}
}
