package replication

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/segment"
)

// newSyncedLeader is a one-replica leader with flush.messages=1 (SyncEveryAppend).
func newSyncedLeader(t *testing.T) *Partition {
	t.Helper()
	p, _ := newPartition(t, true)
	if err := p.BecomeLeaderOf(1, 0, []int32{0}, []int32{0}); err != nil {
		t.Fatal(err)
	}
	return p
}

// An acks=all append returns once written, before its fsync, so that the connection
// reads its next request; every acks=all answer still waits for an fsync that covered
// its records, and the appends made while one fsync ran share the next one (group
// commit across the requests in flight).
func TestAcksAllAppendsAreAcknowledgedOnlyAfterAnFsyncCoveringThem(t *testing.T) {
	p := newSyncedLeader(t)
	answeredOnlyAfterACoveringFsync(t, p, func() (segment.AppendInfo, error) { return p.AppendForAcksAll(batch(2), 1, false, nil, nil) },
		func(pg *Purgatory, end int64, done func([]Outcome)) {
			pg.WaitAcksAll(context.Background(), []AcksAllWrite{{Partition: p, End: end, MinISR: 1}}, time.Minute, done)
		})
}

// answeredOnlyAfterACoveringFsync holds p's first fsync open behind one append (app,
// 2 records) and checks that the append returned before it, that 8 more appends made
// by as many goroutines meanwhile return with none answered (wait parks each), and,
// once the fsync ends, that every one is answered committed with the log fsynced past
// it, after 2 fsyncs in all: the appends made during the first share the second.
func answeredOnlyAfterACoveringFsync(t *testing.T, p *Partition, app func() (segment.AppendInfo, error), wait func(pg *Purgatory, end int64, done func([]Outcome))) {
	t.Helper()
	var fsyncs atomic.Int32
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	testHookAfterFsync = func(q *Partition) {
		if q != p {
			return
		}
		if fsyncs.Add(1) == 1 {
			entered <- struct{}{}
			<-release // the first fsync stays in flight until the others are appended
		}
	}
	var releaseOnce sync.Once
	open := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(func() { open(); testHookAfterFsync = nil }) // a failed test must not leave the fsync held
	pg := NewPurgatory(context.Background())

	type acked struct {
		end, recoveryPoint int64
		outcome            Outcome
	}
	answers := make(chan acked, 16)
	appendAndWait := func() int64 {
		info, err := app()
		if err != nil {
			t.Error(err)
			return -1
		}
		end := info.LastOffset + 1
		wait(pg, end, func(o []Outcome) {
			// The answer is sent here: what is fsynced at this moment is what a power
			// loss would keep.
			answers <- acked{end, p.State().RecoveryPoint, o[0]}
		})
		return end
	}
	returned := make(chan int64, 1)
	go func() { returned <- appendAndWait() }()
	select {
	case <-returned:
	case <-time.After(30 * time.Second):
		t.Fatal("the append waited for its fsync")
	}
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("no fsync started behind the append")
	}
	const concurrent = 8
	var wg sync.WaitGroup
	for range concurrent {
		wg.Add(1)
		go func() { defer wg.Done(); appendAndWait() }()
	}
	wg.Wait() // every append returned while the first fsync is in flight
	if st := p.State(); st.HighWatermark != 0 || st.LogEndOffset != 2*(concurrent+1) || len(answers) != 0 {
		t.Fatalf("with the first fsync in flight: high watermark %d, log end %d, %d answered; want 0, %d, 0",
			st.HighWatermark, st.LogEndOffset, len(answers), 2*(concurrent+1))
	}
	open()
	for range concurrent + 1 {
		select {
		case a := <-answers:
			if a.outcome != OutcomeCommitted || a.recoveryPoint < a.end {
				t.Errorf("records below %d answered %v with the log fsynced below %d", a.end, a.outcome, a.recoveryPoint)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("an append was never answered")
		}
	}
	if n := fsyncs.Load(); n != 2 {
		t.Fatalf("%d fsyncs for 1 append and %d appended during its fsync, want 2", n, concurrent)
	}
}

// An fsync that fails behind acks=all appends fails the log, and the high watermark
// never passes the records it did not make durable: no such append is acknowledged.
// The waiting appends are answered with a storage error (KAFKA_STORAGE_ERROR) as soon
// as the fsync fails, not at their timeout, and so is a wait that starts after it.
func TestFailedFsyncBehindAcksAllAcknowledgesNothing(t *testing.T) {
	p := newSyncedLeader(t)
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	var releaseOnce sync.Once
	open := func() { releaseOnce.Do(func() { close(release) }) }
	testHookAfterFsync = func(q *Partition) {
		if q == p {
			entered <- struct{}{}
			<-release // the fsync fails only once the append's answer waits for it
		}
	}
	testHookFsyncError = func(q *Partition) error {
		if q != p {
			return nil
		}
		return syscall.EIO
	}
	t.Cleanup(func() { open(); testHookAfterFsync, testHookFsyncError = nil, nil })
	pg := NewPurgatory(context.Background())
	wait := func(end int64) chan Outcome {
		ch := make(chan Outcome, 2) // room for a wrong second answer
		// The timeout is far beyond the test's bound: only the failure answers in time.
		pg.WaitAcksAll(context.Background(), []AcksAllWrite{{Partition: p, End: end, MinISR: 1}}, time.Hour, func(o []Outcome) { ch <- o[0] })
		return ch
	}
	info, err := p.AppendForAcksAll(batch(3), 1, false, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	answer := wait(info.LastOffset + 1)
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("no fsync started behind the append")
	}
	if len(answer) != 0 {
		t.Fatalf("answered %v before its fsync ended", <-answer)
	}
	open()
	select {
	case o := <-answer:
		if o != OutcomeStorageError {
			t.Fatalf("the acks=all append whose fsync failed was answered %v, want %v", o, OutcomeStorageError)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the acks=all append whose fsync failed was not answered")
	}
	testHookAfterFsync = nil
	testwait.ForWhat(t, 30*time.Second, "the log failed after its fsync failed", func() error {
		if p.WithLog(func(l *segment.Log) error { return l.Failure() }) == nil {
			return errors.New("the log is not failed")
		}
		return nil
	})
	if st := p.State(); st.HighWatermark > 0 {
		t.Fatalf("high watermark %d after the failed fsync of offsets below %d", st.HighWatermark, info.LastOffset+1)
	}
	if _, err := p.AppendForAcksAll(batch(1), 1, false, nil, nil); !errors.Is(err, segment.ErrLogFailed) {
		t.Fatalf("append after the failed fsync: %v, want ErrLogFailed", err)
	}
	// A produce whose append returned before the failure parks after it: answered at once.
	select {
	case o := <-wait(info.LastOffset + 1):
		if o != OutcomeStorageError {
			t.Fatalf("a wait started after the failed fsync was answered %v, want %v", o, OutcomeStorageError)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a wait started after the failed fsync was not answered")
	}
	if len(answer) != 0 {
		t.Fatalf("the first append was answered twice, the second time %v", <-answer)
	}
}

// A truncation below what the flusher was asked to make durable ends it, rather than
// leaving it fsyncing offsets that no longer exist.
func TestFlusherStopsAtATruncatedEnd(t *testing.T) {
	p := newSyncedLeader(t)
	if _, err := p.AppendForAcksAll(batch(4), 1, false, nil, nil); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.syncBehindLocked(100) // as an append whose records a truncation then removed
	p.mu.Unlock()
	testwait.ForWhat(t, 30*time.Second, "the flusher stopped at the log end", func() error {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.flusherRunning {
			return fmt.Errorf("the flusher runs, durable end %d", p.durableEnd)
		}
		if p.durableEnd != 4 {
			return fmt.Errorf("the flusher stopped with durable end %d, want 4", p.durableEnd)
		}
		return nil
	})
}

// The flushers of many partitions run at most maxParallelLeaderSyncs fsyncs at once (a
// goroutine in fsync holds an OS thread), and every partition's append is still made
// durable once the fsyncs in flight finish.
func TestFlushersRunABoundedNumberOfFsyncsAtOnce(t *testing.T) {
	const n = 3 * maxParallelLeaderSyncs
	parts := make([]*Partition, n)
	mine := map[*Partition]bool{}
	for i := range parts {
		parts[i] = newSyncedLeader(t)
		mine[parts[i]] = true
	}
	var inFlight, most atomic.Int32
	release := make(chan struct{})
	var releaseOnce sync.Once
	open := func() { releaseOnce.Do(func() { close(release) }) }
	testHookAfterFsync = func(q *Partition) {
		if !mine[q] {
			return
		}
		now := inFlight.Add(1)
		for {
			m := most.Load()
			if now <= m || most.CompareAndSwap(m, now) {
				break
			}
		}
		<-release
		inFlight.Add(-1)
	}
	t.Cleanup(func() { open(); testHookAfterFsync = nil })
	for _, p := range parts {
		if _, err := p.AppendForAcksAll(batch(1), 1, false, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	testwait.For(t, 10*time.Second, func() error {
		if got := inFlight.Load(); got != maxParallelLeaderSyncs {
			return fmt.Errorf("%d fsyncs in flight, want the bound %d", got, maxParallelLeaderSyncs)
		}
		return nil
	})
	open()
	testwait.For(t, 10*time.Second, func() error {
		for i, p := range parts {
			if hw := p.State().HighWatermark; hw != 1 {
				return fmt.Errorf("partition %d: high watermark %d, want 1", i, hw)
			}
		}
		return nil
	})
	if m := most.Load(); m > maxParallelLeaderSyncs {
		t.Fatalf("%d fsyncs at once, the bound is %d", m, maxParallelLeaderSyncs)
	}
}
