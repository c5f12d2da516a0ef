package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

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

func waitUntil(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
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
	waitUntil(t, "the topic is cleaned", func() bool { o, ok := c.cleanedUpTo("t"); return ok && o > 1000 })
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
	data, err := os.ReadFile(filepath.Join(b.cfg.logsDir(), segment.CleanerOffsetCheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 3 || lines[0] != "0" || lines[1] != "1" || !strings.HasPrefix(lines[2], "t 0 ") {
		t.Fatalf("cleaner-offset-checkpoint is %q", data)
	}
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
	waitUntil(t, "fine is cleaned and broken is uncleanable", func() bool {
		_, ok := c.cleanedUpTo("fine")
		return ok && c.uncleanableReason("broken") != ""
	})
	produceKeyed(t, cl, "fine", 100, 10)
	produceKeyed(t, cl, "broken", 100, 10)
}
