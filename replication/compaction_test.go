package replication

import (
	"errors"
	"os"
	"testing"

	"github.com/petrel-broker/petrel/segment"
)

// TestProducerStateSurvivesCompaction: after the cleaner has emptied every batch (their
// records have no key, which the cleaner drops as Kafka's does), the producer state
// rebuilt from the compacted log alone still knows each producer's last sequence: a
// retry of the last batch is a duplicate, the next sequence is accepted, a gap refused.
func TestProducerStateSurvivesCompaction(t *testing.T) {
	cfg := segment.DefaultConfig()
	cfg.Compacted = true
	p, dir := newLeader(t, cfg)
	seq := map[int64]int32{}
	var lastFirst int64
	for i := 0; i < 30; i++ {
		pid := int64(7 + i%2)
		info, err := p.AppendAsLeader(idempotentBatch(2, pid, 0, seq[pid]), 0)
		if err != nil {
			t.Fatal(err)
		}
		if pid == 7 {
			lastFirst = info.FirstOffset
		}
		seq[pid] += 2
		if i%5 == 4 {
			p.WithLog(func(l *segment.Log) error { return l.Roll() })
		}
	}
	p.WithLog(func(l *segment.Log) error { return l.Roll() })
	before := p.State().LogEndOffset
	err := p.WithLog(func(l *segment.Log) error {
		plan, err := l.PrepareClean(segment.CleanOptions{UncleanableOffset: l.LogEndOffset(), MaxMapBytes: 1 << 20})
		if err != nil || plan == nil {
			t.Fatalf("prepare: %v %v", plan, err)
		}
		if err := plan.Build(); err != nil {
			return err
		}
		res, err := l.CommitClean(plan)
		if res.RecordsRemoved != 60 {
			t.Errorf("removed %d records, want 60", res.RecordsRemoved)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(false); err != nil {
		t.Fatal(err)
	}
	offsets, _ := ProducerSnapshotOffsets(dir)
	for _, o := range offsets {
		os.Remove(ProducerSnapshotPath(dir, o))
	}
	log, _, err := segment.Open(dir, cfg, segment.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if log.LogEndOffset() != before {
		t.Fatalf("log end offset %d after compaction, was %d", log.LogEndOffset(), before)
	}
	p2 := NewPartition("t", 0, log, before, Options{BrokerID: 0})
	t.Cleanup(func() { p2.Stop(false) })
	if _, err := p2.LoadProducerState(0, 0); err != nil {
		t.Fatal(err)
	}
	if err := p2.BecomeLeader(1, []int32{0}); err != nil {
		t.Fatal(err)
	}
	info, err := p2.AppendAsLeader(idempotentBatch(2, 7, 0, seq[7]-2), 0)
	if err != nil || info.FirstOffset != lastFirst || p2.State().LogEndOffset != before {
		t.Fatalf("retry of producer 7's last batch: %+v %v, want a duplicate at %d", info, err, lastFirst)
	}
	if _, err := p2.AppendAsLeader(idempotentBatch(1, 8, 0, seq[8]+1), 0); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap after compaction: %v, want ErrOutOfOrderSequence", err)
	}
	if _, err := p2.AppendAsLeader(idempotentBatch(1, 8, 0, seq[8]), 0); err != nil {
		t.Fatalf("next sequence after compaction: %v", err)
	}
}
