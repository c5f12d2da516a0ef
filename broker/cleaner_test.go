package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/segment"
)

// produceKeyed writes n records over keys keys to topic, in batches of 100.
func produceKeyed(t *testing.T, cl *kgo.Client, topic string, n, keys int) {
	t.Helper()
	for i := 0; i < n; i += 100 {
		var recs []*kgo.Record
		for j := i; j < min(i+100, n); j++ {
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(recordKey(j % keys)), Value: []byte(fmt.Sprint("v", j))})
		}
		if err := cl.ProduceSync(testContext(t), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

func (c *logCleaner) cleanedUpTo(topic string) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.firstDirty[segment.TopicPartition{Topic: topic}]
	return o, ok
}

func (c *logCleaner) uncleanableReason(topic string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.uncleanable[segment.TopicPartition{Topic: topic}]
}

// A delete topic is left alone until its cleanup.policy becomes compact (as a live
// config change applies it: new settings on the replica), and then the cleaner picks
// it up on its next pass and records its progress in cleaner-offset-checkpoint, in
// Kafka's text format.
func TestCleaner_PolicyChangeAndCheckpoint(t *testing.T) {
	b := startTestBroker(t, "", map[string]string{"log.cleaner.backoff.ms": "20"})
	mustCreateTopic(t, newAdmin(t, b), "t", 1, map[string]*string{"segment.bytes": strp("4096")})
	cl := newClient(t, b)
	produceKeyed(t, cl, "t", 2000, 10)
	lp := b.partitions.get("t", 0)
	c := b.cleaner.Load()
	if _, ok := c.cleanedUpTo("t"); ok {
		t.Fatal("a delete topic was cleaned")
	}
	s := *lp.settings.Load()
	s.segment.Compacted, s.cleaner.compact = true, true
	b.partitions.applySettings(lp, &s)
	testwait.Until(t, 30*time.Second, "the topic is cleaned", func() bool { o, ok := c.cleanedUpTo("t"); return ok && o > 1000 })
	// Back to delete: the log keeps accepting its gaps (recovery must not cut them).
	d := *lp.settings.Load()
	d.segment.Compacted, d.cleaner.compact = false, false
	b.partitions.applySettings(lp, &d)
	lp.WithLog(func(l *segment.Log) error {
		if !l.Config().Compacted {
			t.Error("a cleaned log lost Compacted when its policy went back to delete")
		}
		return nil
	})
	// The cleaner writes the checkpoint just after it records the pass in memory.
	var data []byte
	testwait.Until(t, 30*time.Second, "cleaner-offset-checkpoint names t-0", func() bool {
		var err error
		data, err = os.ReadFile(filepath.Join(b.cfg.logsDir(), segment.CleanerOffsetCheckpointFile))
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		return err == nil && len(lines) == 3 && lines[0] == "0" && lines[1] == "1" && strings.HasPrefix(lines[2], "t 0 ")
	})
}

// A partition whose cleaning fails is marked uncleanable and logged; the broker and the
// other compacted partitions go on.
func TestCleaner_FailureMarksOnlyThatPartitionUncleanable(t *testing.T) {
	b := startTestBroker(t, "", map[string]string{"log.cleaner.enable": "false"})
	adm := newAdmin(t, b)
	compact := map[string]*string{"cleanup.policy": strp("compact"), "segment.bytes": strp("4096")}
	mustCreateTopic(t, adm, "broken", 1, compact)
	mustCreateTopic(t, adm, "fine", 1, compact)
	cl := newClient(t, b)
	produceKeyed(t, cl, "broken", 1000, 10)
	produceKeyed(t, cl, "fine", 1000, 10)
	// Damage a sealed segment of "broken" under the log's feet: a bad record length.
	dir := filepath.Join(b.cfg.logsDir(), "broken-0")
	f, err := os.OpenFile(filepath.Join(dir, "00000000000000000000.log"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0x7f}, segment.BatchHeaderSize) // first record's length varint
	f.Close()
	c := newLogCleaner(b.partitions, b.stop)
	b.cleaner.Store(c)
	c.start(b)
	testwait.Until(t, 30*time.Second, "fine is cleaned and broken is uncleanable", func() bool {
		_, ok := c.cleanedUpTo("fine")
		return ok && c.uncleanableReason("broken") != ""
	})
	produceKeyed(t, cl, "fine", 100, 10)
	produceKeyed(t, cl, "broken", 100, 10)
}

// min.compaction.lag.ms holds young segments back from cleaning; max.compaction.lag.ms
// makes an old dirty segment due whatever the dirty ratio; the active segment and
// anything above the high watermark are never part of the cleanable range.
func TestCleaner_CompactionLags(t *testing.T) {
	b := startTestBroker(t, "", map[string]string{"log.cleaner.enable": "false"})
	mustCreateTopic(t, newAdmin(t, b), "lags", 1, map[string]*string{"cleanup.policy": strp("compact"), "segment.bytes": strp("4096")})
	produceKeyed(t, newClient(t, b), "lags", 1000, 10)
	lp := b.partitions.get("lags", 0)
	tp := segment.TopicPartition{Topic: "lags"}
	c := newLogCleaner(b.partitions, b.stop)
	s := lp.settings.Load().cleaner
	now := time.Now()
	job, must, ok := c.measure(lp, tp, s, 0, false, now)
	var active int64
	lp.WithLog(func(l *segment.Log) error { active = l.ActiveSegmentBaseOffset(); return nil })
	if !ok || must || job.ratio != 1 || job.upTo != active {
		t.Fatalf("no lags: ok %v must %v ratio %v upTo %d (active segment at %d)", ok, must, job.ratio, job.upTo, active)
	}
	s.minLagMs = time.Hour.Milliseconds()
	if _, _, ok := c.measure(lp, tp, s, 0, false, now); ok {
		t.Fatal("segments younger than min.compaction.lag.ms are cleanable")
	}
	s.minLagMs, s.maxLagMs = 0, 1
	if _, must, _ := c.measure(lp, tp, s, 0, false, now.Add(time.Minute)); !must {
		t.Fatal("a dirty segment older than max.compaction.lag.ms is not due")
	}
	// A checkpoint at the active segment leaves nothing dirty.
	if _, _, ok := c.measure(lp, tp, lp.settings.Load().cleaner, active, true, now); ok {
		t.Fatal("a log cleaned up to its active segment is dirty")
	}
}

// An open transaction holds the cleanable range back at its first offset (the last
// stable offset), even when sealed segments lie above it; once it commits, the range
// reaches the active segment again.
func TestCleaner_CleanableRangeStopsAtLastStableOffset(t *testing.T) {
	b := startTestBroker(t, "", map[string]string{"log.cleaner.enable": "false"})
	mustCreateTopic(t, newAdmin(t, b), "txc", 1, map[string]*string{"cleanup.policy": strp("compact"), "segment.bytes": strp("4096")})
	plain := newClient(t, b)
	produceKeyed(t, plain, "txc", 1000, 10)
	tx := newClient(t, b, kgo.TransactionalID("cleaner-lso"), kgo.DefaultProduceTopic("txc"))
	ctx := testContext(t)
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := tx.ProduceSync(ctx, &kgo.Record{Key: []byte(recordKey(1)), Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	lp := b.partitions.get("txc", 0)
	st := lp.State()
	if st.LastStableOffset >= st.HighWatermark {
		t.Fatalf("an open transaction and LSO %d = HW %d", st.LastStableOffset, st.HighWatermark)
	}
	produceKeyed(t, plain, "txc", 1000, 10) // seals segments above the open transaction
	c := newLogCleaner(b.partitions, b.stop)
	tp := segment.TopicPartition{Topic: "txc"}
	var active int64
	lp.WithLog(func(l *segment.Log) error { active = l.ActiveSegmentBaseOffset(); return nil })
	job, _, ok := c.measure(lp, tp, lp.settings.Load().cleaner, 0, false, time.Now())
	if lso := lp.State().LastStableOffset; !ok || job.upTo > lso || lso >= active {
		t.Fatalf("open transaction: ok %v upTo %d, LSO %d, active segment at %d", ok, job.upTo, lso, active)
	}
	if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 30*time.Second, "the LSO reaches the HW", func() bool { st := lp.State(); return st.LastStableOffset == st.HighWatermark })
	lp.WithLog(func(l *segment.Log) error { active = l.ActiveSegmentBaseOffset(); return nil })
	if job, _, ok := c.measure(lp, tp, lp.settings.Load().cleaner, 0, false, time.Now()); !ok || job.upTo != active {
		t.Fatalf("committed: ok %v upTo %d, active segment at %d", ok, job.upTo, active)
	}
}
