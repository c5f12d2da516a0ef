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
)

func TestDefaultMinFreeBytes(t *testing.T) {
	for _, c := range []struct{ size, want int64 }{
		{0, 0},
		{16 << 20, 16 << 20 / 100},             // 1 % of a small file system
		{10 << 30, 10 << 30 / 100},             // 1 % of 10 GiB: 102 MiB
		{25600 << 20, 256 << 20},               // 1 % of 25 GiB is exactly 256 MiB
		{1 << 40, 256 << 20},                   // 256 MiB at most
		{int64(1) << 50, 256 << 20},            // however large
		{100, 1},                               // tiny
		{99, 0},                                // rounds down
		{(256 << 20) * 100, 256 << 20},         // the boundary
		{(256<<20)*100 - 100, (256 << 20) - 1}, // just below it
	} {
		if got := defaultMinFreeBytes(c.size); got != c.want {
			t.Errorf("defaultMinFreeBytes(%d) = %d, want %d", c.size, got, c.want)
		}
	}
}

// fakeStatfs is a file system whose free and total bytes the test sets.
type fakeStatfs struct {
	free, size atomic.Int64
	err        atomic.Pointer[error]
	calls      atomic.Int64
}

func (f *fakeStatfs) statfs(string) (int64, int64, error) {
	f.calls.Add(1)
	if p := f.err.Load(); p != nil {
		return -1, -1, *p
	}
	return f.free.Load(), f.size.Load(), nil
}

func TestLogDirSpace_BelowFloor(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, c := range []struct {
		name       string
		property   int64
		free, size int64
		statErr    error
		below      bool
	}{
		{"default rule, plenty", -1, 1 << 30, 100 << 30, nil, false},
		{"default rule, below 256 MiB", -1, 255 << 20, 100 << 30, nil, true},
		{"default rule, 1 % of a small file system", -1, 150 << 10, 16 << 20, nil, true},
		{"default rule, just above 1 %", -1, 200 << 10, 16 << 20, nil, false},
		{"explicit floor", 1 << 20, 1<<20 - 1, 1 << 30, nil, true},
		{"explicit floor reached exactly", 1 << 20, 1 << 20, 1 << 30, nil, false},
		{"off", 0, 0, 1 << 30, nil, false},
		{"statfs fails", -1, 0, 0, errors.New("EIO"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newLogDirSpace("unused", c.property)
			fs := &fakeStatfs{}
			fs.free.Store(c.free)
			fs.size.Store(c.size)
			if c.statErr != nil {
				fs.err.Store(&c.statErr)
			}
			s.setStatfs(fs.statfs)
			err := s.belowFloor(now)
			if (err != nil) != c.below {
				t.Fatalf("belowFloor = %v, want below %v", err, c.below)
			}
			if err != nil && !strings.Contains(err.Error(), config.MinFreeBytesProperty) {
				t.Fatalf("the refusal does not name %s: %v", config.MinFreeBytesProperty, err)
			}
		})
	}
}

// TestLogDirSpace_ReadsAtMostEveryInterval: Produce costs an atomic load; the file
// system is asked again only once the last reading is logDirSpaceInterval old.
func TestLogDirSpace_ReadsAtMostEveryInterval(t *testing.T) {
	s := newLogDirSpace("unused", 1<<20)
	fs := &fakeStatfs{}
	fs.free.Store(2 << 20)
	fs.size.Store(1 << 30)
	s.setStatfs(fs.statfs)
	now := time.Unix(1000, 0)
	for i := range 100 {
		if err := s.belowFloor(now.Add(time.Duration(i) * time.Millisecond / 2)); err != nil {
			t.Fatal(err)
		}
	}
	if n := fs.calls.Load(); n != 1 {
		t.Fatalf("%d statfs calls within %s, want 1", n, logDirSpaceInterval)
	}
	fs.free.Store(1 << 10)
	if err := s.belowFloor(now.Add(logDirSpaceInterval / 2)); err != nil {
		t.Fatal("a reading younger than the interval was not used")
	}
	if err := s.belowFloor(now.Add(logDirSpaceInterval)); err == nil {
		t.Fatal("a reading as old as the interval was used")
	}
}

// TestProduce_BelowMinFreeBytesIsRetriable: while the log directory's file system has
// less free space than the floor, Produce is answered NOT_ENOUGH_REPLICAS (retriable,
// nothing written) naming the property, the metric says so, and once space is back the
// producer's retries land: every record once.
func TestProduce_BelowMinFreeBytesIsRetriable(t *testing.T) {
	b := startTestBroker(t, "", map[string]string{config.MinFreeBytesProperty: "1048576"})
	fs := &fakeStatfs{}
	fs.free.Store(512 << 10)
	fs.size.Store(1 << 30)
	b.logSpace.setStatfs(fs.statfs)
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
	fs.free.Store(2 << 20)
	if err := <-done; err != nil {
		t.Fatalf("retried produce once space is back: %v", err)
	}
	consumer := newClient(t, b, kgo.ConsumeTopics("floor"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fetches := consumer.PollFetches(ctx)
	if recs := fetches.Records(); len(recs) != 1 || string(recs[0].Value) != "retried" {
		t.Fatalf("the log holds %d records (%v), want the retried one only", len(recs), fetches.Errors())
	}
}
