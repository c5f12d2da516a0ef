package broker

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/segment"
)

// TestLogDirSpace_RefusalNamesTheProperty: below the floor, Produce's refusal names
// petrel.log.dir.min.free.bytes and the floor; above it there is none.
func TestLogDirSpace_RefusalNamesTheProperty(t *testing.T) {
	s := newLogDirSpace("unused", 1<<20)
	var free atomic.Int64
	free.Store(1<<20 - 1)
	s.SetStatfs(func(string) (int64, int64, error) { return free.Load(), 1 << 30, nil })
	now := time.Unix(1000, 0)
	if err := s.belowFloor(now); err == nil || !strings.Contains(err.Error(), config.MinFreeBytesProperty+"=1048576") {
		t.Fatalf("the refusal does not name %s: %v", config.MinFreeBytesProperty, err)
	}
	free.Store(1 << 20)
	if err := s.belowFloor(now.Add(segment.DirSpaceInterval)); err != nil {
		t.Fatalf("at the floor exactly: %v", err)
	}
}

// TestProduce_BelowMinFreeBytesIsRetriable: while the log directory's file system has
// less free space than the floor, Produce is answered NOT_ENOUGH_REPLICAS (retriable,
// nothing written) naming the property, the metric says so, and once space is back the
// producer's retries land: every record once.
func TestProduce_BelowMinFreeBytesIsRetriable(t *testing.T) {
	b := startTestBroker(t, "", map[string]string{config.MinFreeBytesProperty: "1048576"})
	var free atomic.Int64 // the file system's free bytes
	free.Store(512 << 10)
	b.logSpace.SetStatfs(func(string) (int64, int64, error) { return free.Load(), 1 << 30, nil })
	mustCreateTopic(t, newAdmin(t, b), "floor", 1, nil)
	ctx := testContext(t)

	cl := newClient(t, b, kgo.RecordRetries(0), kgo.DisableIdempotentWrite())
	err := cl.ProduceSync(ctx, &kgo.Record{Topic: "floor", Value: []byte("refused")}).FirstErr()
	if !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("produce below the floor: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	if !kerr.IsRetriable(err) {
		t.Fatal("NOT_ENOUGH_REPLICAS is not retriable")
	}
	if s := b.metricsSnapshot(); !s.LogDirBelowMinFree || s.LogDirFreeBytes != 512<<10 {
		t.Fatalf("metrics: below %v, free %d", s.LogDirBelowMinFree, s.LogDirFreeBytes)
	}

	// A retrying producer: its record lands once space is freed.
	retrying := newClient(t, b, kgo.RecordDeliveryTimeout(20*time.Second))
	done := make(chan error, 1)
	retrying.Produce(ctx, &kgo.Record{Topic: "floor", Value: []byte("retried")}, func(_ *kgo.Record, err error) { done <- err })
	free.Store(2 << 20)
	if err := <-done; err != nil {
		t.Fatalf("retried produce once space is back: %v", err)
	}
	consumer := newClient(t, b, kgo.ConsumeTopics("floor"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fetches := consumer.PollFetches(ctx)
	if recs := fetches.Records(); len(recs) != 1 || string(recs[0].Value) != "retried" {
		t.Fatalf("the log holds %d records (%v), want the retried one only", len(recs), fetches.Errors())
	}
}
