package coordinator

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kerr"
)

// testShard records what the runtime does to it and fails the test on concurrent calls.
type testShard struct {
	t        *testing.T
	inUse    atomic.Int32
	replayed []Record // executor only
	loaded   atomic.Int32
	unloaded atomic.Int32
	onUnload func() Result
}

func (s *testShard) enter() func() {
	if s.inUse.Add(1) != 1 {
		s.t.Error("shard called concurrently")
	}
	return func() { s.inUse.Add(-1) }
}

func (s *testShard) Replay(key, value []byte) error {
	defer s.enter()()
	if string(key) == "bad" {
		return errors.New("cannot decode")
	}
	s.replayed = append(s.replayed, Record{Key: key, Value: value})
	return nil
}

func (s *testShard) Loaded(time.Time) Result {
	defer s.enter()()
	s.loaded.Add(1)
	return Result{}
}

func (s *testShard) Unloaded(time.Time) Result {
	defer s.enter()()
	s.unloaded.Add(1)
	if s.onUnload != nil {
		return s.onUnload()
	}
	return Result{}
}

// run submits op, retrying while the partition loads, and returns its first result.
func submitWait[T any](t *testing.T, r *Runtime, p int32, op func(now time.Time, s Shard) (T, Result)) T {
	t.Helper()
	ch := make(chan T, 1)
	err := r.Submit(p, func(now time.Time, s Shard) Result {
		v, res := op(now, s)
		ch <- v
		return res
	}, func(error) { t.Error("op failed") })
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("op did not run")
	}
	panic("unreachable")
}

func startRuntime(t *testing.T, cfg Config) *Runtime {
	r := New(cfg)
	t.Cleanup(r.Close)
	return r
}

func appendRecords(t *testing.T, f *fakeLog, recs ...Record) {
	t.Helper()
	f.set(func(f *fakeLog) { f.autoCommit = true })
	if _, err := f.AppendAsLeaderInEpoch(EncodeBatch(recs, time.Now()), -1, 0); err != nil {
		t.Fatal(err)
	}
	f.set(func(f *fakeLog) { f.autoCommit = false })
}

func TestLoadReplaysCommittedLogThenServes(t *testing.T) {
	f := newFakeLog(3)
	appendRecords(t, f, Record{Key: []byte("a"), Value: []byte("1")}, Record{Key: []byte("bad"), Value: []byte("x")})
	appendRecords(t, f, Record{Key: []byte("a")}) // tombstone
	// An appended but uncommitted batch: loading waits for the high watermark.
	f.set(func(f *fakeLog) { f.autoCommit = false })
	if _, err := f.AppendAsLeaderInEpoch(EncodeBatch([]Record{{Key: []byte("b"), Value: []byte("2")}}, time.Now()), -1, 0); err != nil {
		t.Fatal(err)
	}
	r := startRuntime(t, Config{})
	s := &testShard{t: t}
	r.Load(LoadSpec{Partition: 7, LeaderEpoch: 3, Log: f, Shard: s})
	if err := r.Submit(7, func(time.Time, Shard) Result { return Result{} }, nil); !errors.Is(err, ErrLoadInProgress) {
		t.Fatalf("submit while loading: %v, want ErrLoadInProgress", err)
	}
	if err := r.Submit(8, func(time.Time, Shard) Result { return Result{} }, nil); !errors.Is(err, ErrNotCoordinator) {
		t.Fatalf("submit to a partition not loaded: %v, want ErrNotCoordinator", err)
	}
	time.Sleep(50 * time.Millisecond) // not a synchronisation: the runtime must still be loading
	if len(r.Serving()) != 0 {
		t.Fatal("serving before the high watermark reached the log end")
	}
	f.set(func(f *fakeLog) { f.hw = f.leo })
	testwait.Until(t, 10*time.Second, "serving", func() bool { return len(r.Serving()) == 1 })
	got := submitWait(t, r, 7, func(_ time.Time, sh Shard) ([]Record, Result) {
		return append([]Record(nil), sh.(*testShard).replayed...), Result{}
	})
	want := []Record{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("a")}, {Key: []byte("b"), Value: []byte("2")}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("replayed %v, want %v", got, want)
	}
	if got[1].Value != nil {
		t.Fatal("a tombstone replayed with a non-nil value")
	}
	if s.loaded.Load() != 1 {
		t.Fatalf("Loaded called %d times", s.loaded.Load())
	}
}

func TestWriteCompletesWhenHighWatermarkPasses(t *testing.T) {
	f := newFakeLog(0)
	r := startRuntime(t, Config{})
	r.Load(LoadSpec{Partition: 0, LeaderEpoch: 0, Log: f, Shard: &testShard{t: t}})
	testwait.Until(t, 10*time.Second, "serving", func() bool { return len(r.Serving()) == 1 })
	done := make(chan int16, 1)
	submitWait(t, r, 0, func(time.Time, Shard) (struct{}, Result) {
		return struct{}{}, Result{Records: []Record{{Key: []byte("k"), Value: []byte("v")}, {Key: []byte("k2")}},
			Committed: func(_ time.Time, code int16) Result { done <- code; return Result{} }}
	})
	select {
	case code := <-done:
		t.Fatalf("completed with %d before the high watermark moved", code)
	case <-time.After(50 * time.Millisecond):
	}
	f.set(func(f *fakeLog) { f.hw = f.leo })
	if code := <-done; code != 0 {
		t.Fatalf("completed with %d, want 0", code)
	}
	// The stored batch is one valid v2 batch with both records.
	f.mu.Lock()
	batch := f.batches[0]
	f.mu.Unlock()
	if _, err := segment.ValidateBatch(batch); err != nil {
		t.Fatal(err)
	}
	var got []Record
	if _, err := decodeBatches(batch, func(_ int64, _ BatchInfo, k, v []byte) { got = append(got, Record{k, v}) }, func(Marker) {}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || string(got[1].Key) != "k2" || got[1].Value != nil {
		t.Fatalf("decoded %v", got)
	}
}

func TestWriteErrorsAreTranslated(t *testing.T) {
	const none = -1 // Committed not called (the write is still pending)
	for _, tc := range []struct {
		name      string
		setup     func(f *fakeLog)
		after     func(f *fakeLog) // after the append
		want      int16            // the answer: TimedOut's code, else Committed's
		committed int16            // Committed's code
	}{
		{"not enough replicas", func(f *fakeLog) { f.appendErr = replication.ErrNotEnoughReplicas }, nil, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorNotAvailable.Code},
		{"not leader", func(f *fakeLog) { f.appendErr = replication.ErrNotLeader }, nil, kerr.NotCoordinator.Code, kerr.NotCoordinator.Code},
		{"storage error", func(f *fakeLog) { f.appendErr = segment.ErrLogFailed }, nil, kerr.NotCoordinator.Code, kerr.NotCoordinator.Code},
		{"timed out", func(*fakeLog) {}, nil, kerr.CoordinatorNotAvailable.Code, none},
		{"leadership lost while waiting", func(*fakeLog) {}, func(f *fakeLog) { f.role = replication.Follower }, kerr.NotCoordinator.Code, kerr.NotCoordinator.Code},
		// Still the leader and the HW passed the write, but in a newer leader epoch than
		// the load's: the runtime's own fence, checked beside the acks=all rule.
		{"leader epoch moved while waiting", func(*fakeLog) {}, func(f *fakeLog) { f.epoch++; f.hw = f.leo }, kerr.NotCoordinator.Code, kerr.NotCoordinator.Code},
		// NOT_ENOUGH_REPLICAS_AFTER_APPEND: answered with the error, applied (it is committed).
		{"ISR shrank after append", func(f *fakeLog) { f.isr = 2 }, func(f *fakeLog) { f.isr = 1; f.hw = f.leo }, kerr.CoordinatorNotAvailable.Code, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeLog(0)
			r := startRuntime(t, Config{WriteTimeout: 100 * time.Millisecond})
			r.Load(LoadSpec{Partition: 0, LeaderEpoch: 0, Log: f, Shard: &testShard{t: t}, MinInsync: func() int { return 2 }})
			testwait.Until(t, 10*time.Second, "serving", func() bool { return len(r.Serving()) == 1 })
			f.set(func(f *fakeLog) { f.isr = 2 })
			f.set(tc.setup)
			answered := make(chan int16, 1)
			committed := make(chan int16, 1)
			var once sync.Once
			answer := func(code int16) { once.Do(func() { answered <- code }) }
			submitWait(t, r, 0, func(time.Time, Shard) (struct{}, Result) {
				return struct{}{}, Result{Records: []Record{{Key: []byte("k")}},
					Committed: func(_ time.Time, code int16) Result { answer(code); committed <- code; return Result{} },
					TimedOut:  func(_ time.Time, code int16) Result { answer(code); return Result{} }}
			})
			if tc.after != nil {
				// "After the append" means after it: the op has run, but the runtime
				// appends its records a moment later.
				testwait.Until(t, 10*time.Second, "the append", func() bool {
					f.mu.Lock()
					defer f.mu.Unlock()
					return len(f.batches) == 1
				})
				f.set(tc.after)
			}
			select {
			case code := <-answered:
				if code != tc.want {
					t.Fatalf("answered %d, want %d", code, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("write never answered")
			}
			if tc.committed == none {
				select {
				case code := <-committed:
					t.Fatalf("committed with %d, the write is not in the log's committed part", code)
				default:
				}
				return
			}
			select {
			case code := <-committed:
				if code != tc.committed {
					t.Fatalf("committed with %d, want %d", code, tc.committed)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("write never completed")
			}
		})
	}
}

func TestCommittedChainsFurtherWritesInOrder(t *testing.T) {
	f := newFakeLog(0)
	f.autoCommit = true
	r := startRuntime(t, Config{})
	r.Load(LoadSpec{Partition: 0, LeaderEpoch: 0, Log: f, Shard: &testShard{t: t}})
	testwait.Until(t, 10*time.Second, "serving", func() bool { return len(r.Serving()) == 1 })
	var order []string
	var mu sync.Mutex
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	done := make(chan struct{})
	submitWait(t, r, 0, func(time.Time, Shard) (struct{}, Result) {
		return struct{}{}, Result{Records: []Record{{Key: []byte("1")}}, Committed: func(_ time.Time, code int16) Result {
			note(fmt.Sprint("first ", code))
			return Result{Records: []Record{{Key: []byte("2")}}, Committed: func(_ time.Time, code int16) Result {
				note(fmt.Sprint("second ", code))
				return Result{Committed: func(_ time.Time, code int16) Result {
					note(fmt.Sprint("no write ", code))
					close(done)
					return Result{}
				}}
			}}
		}}
	})
	<-done
	if fmt.Sprint(order) != "[first 0 second 0 no write 0]" {
		t.Fatalf("order %v", order)
	}
	if f.State().LogEndOffset != 2 {
		t.Fatalf("log end %d, want 2", f.State().LogEndOffset)
	}
}

func TestUnloadFailsPendingWritesAndQueuedOps(t *testing.T) {
	f := newFakeLog(0)
	r := startRuntime(t, Config{})
	unloadAnswered := make(chan int16, 1)
	s := &testShard{t: t, onUnload: func() Result {
		return Result{Committed: func(_ time.Time, code int16) Result { unloadAnswered <- code; return Result{} }}
	}}
	r.Load(LoadSpec{Partition: 0, LeaderEpoch: 0, Log: f, Shard: s})
	testwait.Until(t, 10*time.Second, "serving", func() bool { return len(r.Serving()) == 1 })
	pending := make(chan int16, 1)
	block := make(chan struct{})
	submitWait(t, r, 0, func(time.Time, Shard) (struct{}, Result) {
		return struct{}{}, Result{Records: []Record{{Key: []byte("k")}},
			Committed: func(_ time.Time, code int16) Result { pending <- code; return Result{} }}
	})
	// One op blocks the executor; the one queued behind it must fail.
	started := make(chan struct{})
	if err := r.Submit(0, func(time.Time, Shard) Result { close(started); <-block; return Result{} }, nil); err != nil {
		t.Fatal(err)
	}
	<-started
	failed := make(chan error, 1)
	if err := r.Submit(0, func(time.Time, Shard) Result { t.Error("queued op ran after unload"); return Result{} },
		func(err error) { failed <- err }); err != nil {
		t.Fatal(err)
	}
	r.Unload(0)
	close(block)
	if code := <-pending; code != kerr.NotCoordinator.Code {
		t.Fatalf("pending write: %d, want NOT_COORDINATOR", code)
	}
	if err := <-failed; !errors.Is(err, ErrNotCoordinator) {
		t.Fatalf("queued op: %v", err)
	}
	if code := <-unloadAnswered; code != kerr.NotCoordinator.Code {
		t.Fatalf("unload answers: %d", code)
	}
	if err := r.Submit(0, func(time.Time, Shard) Result { return Result{} }, nil); !errors.Is(err, ErrNotCoordinator) {
		t.Fatalf("submit after unload: %v", err)
	}
}

func TestTimersReplaceCancelAndDieWithTheLoad(t *testing.T) {
	f := newFakeLog(0)
	r := startRuntime(t, Config{})
	r.Load(LoadSpec{Partition: 0, LeaderEpoch: 0, Log: f, Shard: &testShard{t: t}})
	testwait.Until(t, 10*time.Second, "serving", func() bool { return len(r.Serving()) == 1 })
	fired := make(chan string, 10)
	fire := func(name string) Op {
		return func(time.Time, Shard) Result { fired <- name; return Result{} }
	}
	now := time.Now()
	submitWait(t, r, 0, func(time.Time, Shard) (struct{}, Result) {
		return struct{}{}, Result{Timers: []Timer{
			{Key: "a", At: now.Add(time.Hour), Fire: fire("a-old")},
			{Key: "a", At: now.Add(10 * time.Millisecond), Fire: fire("a")}, // replaces
			{Key: "b", At: now.Add(10 * time.Millisecond), Fire: fire("b")},
			{Key: "b"}, // cancels
			{Key: "c", At: now.Add(time.Hour), Fire: fire("c")},
		}}
	})
	if got := <-fired; got != "a" {
		t.Fatalf("fired %q, want a", got)
	}
	r.Unload(0)
	select {
	case got := <-fired:
		t.Fatalf("timer %q fired after it was replaced, cancelled or unloaded", got)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestLoadAgainInANewEpochReloads(t *testing.T) {
	f := newFakeLog(1)
	appendRecords(t, f, Record{Key: []byte("a"), Value: []byte("1")})
	r := startRuntime(t, Config{})
	s1 := &testShard{t: t}
	if !r.Load(LoadSpec{Partition: 0, LeaderEpoch: 1, Log: f, Shard: s1}) {
		t.Fatal("first load refused")
	}
	if r.Load(LoadSpec{Partition: 0, LeaderEpoch: 1, Log: f, Shard: &testShard{t: t}}) {
		t.Fatal("a load in the same epoch replaced the loaded partition")
	}
	testwait.Until(t, 10*time.Second, "serving", func() bool { return len(r.Serving()) == 1 })
	f.set(func(f *fakeLog) { f.epoch = 2 })
	s2 := &testShard{t: t}
	r.Load(LoadSpec{Partition: 0, LeaderEpoch: 2, Log: f, Shard: s2})
	testwait.Until(t, 10*time.Second, "the old load unloaded", func() bool { return s1.unloaded.Load() == 1 })
	testwait.Until(t, 10*time.Second, "the new load serving", func() bool { return s2.loaded.Load() == 1 })
	n := submitWait(t, r, 0, func(_ time.Time, sh Shard) (int, Result) { return len(sh.(*testShard).replayed), Result{} })
	if n != 1 {
		t.Fatalf("new load replayed %d records", n)
	}
}

// An executor loaded in an older leader epoch (its reload not yet arrived) writes
// nothing: the append carries its epoch and the partition refuses it.
func TestStaleEpochWriteIsRefused(t *testing.T) {
	f := newFakeLog(1)
	r := startRuntime(t, Config{WriteTimeout: 10 * time.Second})
	r.Load(LoadSpec{Partition: 0, LeaderEpoch: 1, Log: f, Shard: &testShard{t: t}})
	testwait.Until(t, 10*time.Second, "serving", func() bool { return len(r.Serving()) == 1 })
	f.set(func(f *fakeLog) { f.epoch = 2 })
	done := make(chan int16, 1)
	submitWait(t, r, 0, func(time.Time, Shard) (struct{}, Result) {
		return struct{}{}, Result{Records: []Record{{Key: []byte("k")}},
			Committed: func(_ time.Time, code int16) Result { done <- code; return Result{} }}
	})
	select {
	case code := <-done:
		if code != kerr.NotCoordinator.Code {
			t.Fatalf("code %d, want NOT_COORDINATOR", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("write never completed")
	}
	if st := f.State(); st.LogEndOffset != 0 {
		t.Fatalf("the stale executor wrote: log end %d", st.LogEndOffset)
	}
}

// offsets.commit.timeout.ms runs on the runtime's clock: a write the high watermark has
// not passed is answered COORDINATOR_NOT_AVAILABLE once the clock passes its deadline.
func TestWriteTimeoutFollowsTheClock(t *testing.T) {
	var mu sync.Mutex
	clock := time.UnixMilli(1_700_000_000_000)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	f := newFakeLog(0)
	r := startRuntime(t, Config{WriteTimeout: time.Hour, Now: now})
	r.Load(LoadSpec{Partition: 0, LeaderEpoch: 0, Log: f, Shard: &testShard{t: t}})
	testwait.Until(t, 10*time.Second, "serving", func() bool { return len(r.Serving()) == 1 })
	done := make(chan int16, 1)
	submitWait(t, r, 0, func(time.Time, Shard) (struct{}, Result) {
		return struct{}{}, Result{Records: []Record{{Key: []byte("k")}},
			TimedOut: func(_ time.Time, code int16) Result { done <- code; return Result{} }}
	})
	mu.Lock()
	clock = clock.Add(time.Hour)
	mu.Unlock()
	f.set(func(*fakeLog) {}) // wakes the executor, as any high watermark move does
	select {
	case code := <-done:
		if code != kerr.CoordinatorNotAvailable.Code {
			t.Fatalf("code %d, want COORDINATOR_NOT_AVAILABLE", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the write did not time out on the runtime's clock")
	}
}

func TestConcurrentSubmitsRunOneAtATime(t *testing.T) {
	f := newFakeLog(0)
	f.autoCommit = true
	r := startRuntime(t, Config{})
	s := &testShard{t: t}
	r.Load(LoadSpec{Partition: 0, LeaderEpoch: 0, Log: f, Shard: s})
	testwait.Until(t, 10*time.Second, "serving", func() bool { return len(r.Serving()) == 1 })
	var wg sync.WaitGroup
	var completed atomic.Int32
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				done := make(chan struct{})
				err := r.Submit(0, func(time.Time, Shard) Result {
					defer s.enter()()
					return Result{Records: []Record{{Key: fmt.Appendf(nil, "%d-%d", i, j)}}, Committed: func(time.Time, int16) Result {
						defer s.enter()()
						completed.Add(1)
						close(done)
						return Result{}
					}}
				}, nil)
				if err != nil {
					t.Error(err)
					return
				}
				<-done
			}
		}()
	}
	wg.Wait()
	if completed.Load() != 400 || f.State().LogEndOffset != 400 {
		t.Fatalf("completed %d, log end %d", completed.Load(), f.State().LogEndOffset)
	}
}

func TestCloseStopsEverything(t *testing.T) {
	r := New(Config{})
	for p := range int32(3) {
		r.Load(LoadSpec{Partition: p, LeaderEpoch: 0, Log: newFakeLog(0), Shard: &testShard{t: t}})
	}
	r.Close()
	if err := r.Submit(0, func(time.Time, Shard) Result { return Result{} }, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("submit after close: %v", err)
	}
	if r.Load(LoadSpec{Partition: 0, Log: newFakeLog(0), Shard: &testShard{t: t}}) {
		t.Fatal("load after close")
	}
}

func TestPanickingShardFailsTheRequestAndStopsServing(t *testing.T) {
	f := newFakeLog(0)
	r := startRuntime(t, Config{})
	r.Load(LoadSpec{Partition: 0, LeaderEpoch: 0, Log: f, Shard: &testShard{t: t}})
	testwait.Until(t, 10*time.Second, "serving", func() bool { return len(r.Serving()) == 1 })
	failed := make(chan error, 1)
	if err := r.Submit(0, func(time.Time, Shard) Result { panic("bug") }, func(err error) { failed <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-failed; !errors.Is(err, ErrNotCoordinator) {
		t.Fatalf("failed with %v", err)
	}
	testwait.Until(t, 10*time.Second, "stopped serving", func() bool { return len(r.Serving()) == 0 })
	if err := r.Submit(0, func(time.Time, Shard) Result { return Result{} }, nil); !errors.Is(err, ErrNotCoordinator) {
		t.Fatalf("submit after the panic: %v", err)
	}
}
