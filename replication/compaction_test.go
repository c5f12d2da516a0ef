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
	plan, err := p.PrepareClean(segment.CleanOptions{UncleanableOffset: before, MaxMapBytes: 1 << 20})
	if err != nil || plan == nil {
		t.Fatalf("prepare: %v %v", plan, err)
	}
	if err := plan.Build(); err != nil {
		t.Fatal(err)
	}
	res, err := p.CommitClean(plan)
	if err != nil {
		t.Fatal(err)
	}
	if res.RecordsRemoved != 60 {
		t.Errorf("removed %d records, want 60", res.RecordsRemoved)
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
	if err := p2.BecomeLeaderOf(1, 0, []int32{0}, []int32{0}); err != nil {
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

// TestCleanForgetsAbortedTransactionsWithTheirMarkers: the cleaner discards an aborted
// transaction's data, then its ABORT marker; from then on a read_committed fetch no
// longer lists the transaction (else the consumer would drop the producer's later,
// committed transaction as aborted), and the transaction index agrees.
func TestCleanForgetsAbortedTransactionsWithTheirMarkers(t *testing.T) {
	cfg := segment.DefaultConfig()
	cfg.Compacted = true
	p, _ := newLeader(t, cfg)
	app := func(b []byte) segment.AppendInfo {
		t.Helper()
		info, err := p.AppendAsLeader(b, 0)
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	app(transactionalBatch(2, 5, 0, 0))
	abort := app(markerBatch(5, 0, false))
	committed := app(transactionalBatch(2, 5, 0, 2))
	app(markerBatch(5, 0, true))
	p.WithLog(func(l *segment.Log) error { return l.Roll() })
	app(batch(1))
	aborted := func() []AbortedTxn {
		t.Helper()
		res, err := p.ReadIsolated(0, 1<<20, -1, LeaderOnly, true)
		if err != nil {
			t.Fatal(err)
		}
		return res.Aborted
	}
	if got := aborted(); len(got) != 1 || got[0].LastOffset != abort.FirstOffset {
		t.Fatalf("aborted before cleaning: %+v", got)
	}
	var dropped []AbortedTxn
	for pass := 0; pass < 3; pass++ { // the data, the marker's delete horizon, the marker
		plan, err := p.PrepareClean(segment.CleanOptions{UncleanableOffset: p.State().LogEndOffset, MaxMapBytes: 1 << 20})
		if err != nil || plan == nil {
			t.Fatalf("prepare: %v %v", plan, err)
		}
		if err := plan.Build(); err != nil {
			t.Fatal(err)
		}
		res, err := p.CommitClean(plan)
		if err != nil {
			t.Fatal(err)
		}
		dropped = append(dropped, res.DroppedAbortedTxns...)
	}
	if len(dropped) != 1 || dropped[0].LastOffset != abort.FirstOffset {
		t.Fatalf("dropped %+v, want the transaction aborted at %d", dropped, abort.FirstOffset)
	}
	if got := aborted(); len(got) != 0 {
		t.Fatalf("a read_committed fetch still lists %+v", got)
	}
	p.WithLog(func(l *segment.Log) error {
		if idx, err := l.AbortedTxns(); err != nil || len(idx) != 0 {
			t.Fatalf("transaction index %+v, %v", idx, err)
		}
		found := false
		return l.ScanBatchHeaders(0, func(h segment.BatchHeader) error {
			if h.BaseOffset == abort.FirstOffset {
				t.Fatalf("the ABORT marker at %d is still in the log", h.BaseOffset)
			}
			if h.BaseOffset == committed.FirstOffset {
				found = true // the producer's last batch: kept (empty: its records have no key)
			}
			if h.BaseOffset > committed.FirstOffset && !found {
				t.Fatal("the producer's last batch is gone")
			}
			return nil
		})
	})
}
