package coordinator

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/replication"
	"github.com/twmb/franz-go/pkg/kerr"
)

// kvShard is a key/value store in the log: a load replays every record, a live write
// applies its records when Committed reports 0. get is safe from the test goroutine.
type kvShard struct {
	testShard
	mu sync.Mutex
	kv map[string]string
}

func newKV(t *testing.T) *kvShard {
	return &kvShard{testShard: testShard{t: t}, kv: map[string]string{}}
}

func (s *kvShard) Replay(key, value []byte) error {
	s.set(string(key), string(value))
	return nil
}

func (s *kvShard) set(k, v string) {
	s.mu.Lock()
	s.kv[k] = v
	s.mu.Unlock()
}

func (s *kvShard) get() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.kv)
}

// put writes k=v; answers gets the answer (TimedOut's code, else Committed's) and
// commits Committed's code.
func put(t *testing.T, r *Runtime, k, v string, answers, commits chan<- string) {
	t.Helper()
	var once sync.Once
	answer := func(code int16) { once.Do(func() { answers <- fmt.Sprintf("%s=%s %d", k, v, code) }) }
	submitWait(t, r, 0, func(_ time.Time, sh Shard) (struct{}, Result) {
		s := sh.(*kvShard)
		return struct{}{}, Result{Records: []Record{{Key: []byte(k), Value: []byte(v)}},
			Committed: func(_ time.Time, code int16) Result {
				if code == 0 {
					s.set(k, v)
				}
				answer(code)
				commits <- fmt.Sprintf("%s=%s %d", k, v, code)
				return Result{}
			},
			TimedOut: func(_ time.Time, code int16) Result { answer(code); return Result{} }}
	})
}

func recv(t *testing.T, ch <-chan string, what string) string {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s", what)
	}
	return ""
}

// waitBatches waits until f holds n batches (an op runs before its write is appended).
func waitBatches(t *testing.T, f *fakeLog, n int) {
	t.Helper()
	testwait.Until(t, 10*time.Second, fmt.Sprintf("%d batches", n), func() bool { f.mu.Lock(); defer f.mu.Unlock(); return len(f.batches) == n })
}

// loadAgain loads f on a new runtime (a failover or restart) and returns what it shows.
func loadAgain(t *testing.T, f *fakeLog) map[string]string {
	t.Helper()
	r := startRuntime(t, Config{})
	s := newKV(t)
	r.Load(LoadSpec{Partition: 0, LeaderEpoch: f.State().LeaderEpoch, Log: f, Shard: s})
	testwait.Until(t, 10*time.Second, "the second load", func() bool { return len(r.Serving()) == 1 })
	return s.get()
}

// A write answered COORDINATOR_NOT_AVAILABLE at its timeout that lands afterwards is
// applied then, before the write after it: the live state is what a load shows.
func TestTimedOutWriteAppliedInLogOrderWhenItLands(t *testing.T) {
	var mu sync.Mutex
	clock := time.UnixMilli(1_700_000_000_000)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	f := newFakeLog(0)
	r := startRuntime(t, Config{WriteTimeout: time.Hour, Now: now})
	s := newKV(t)
	r.Load(LoadSpec{Partition: 0, LeaderEpoch: 0, Log: f, Shard: s})
	testwait.Until(t, 10*time.Second, "serving", func() bool { return len(r.Serving()) == 1 })
	answers, commits := make(chan string, 4), make(chan string, 4)
	put(t, r, "k", "1", answers, commits)
	put(t, r, "j", "1", answers, commits)
	waitBatches(t, f, 2)
	mu.Lock()
	clock = clock.Add(time.Hour)
	mu.Unlock()
	f.set(func(*fakeLog) {})                            // wakes the executor
	for _, want := range []string{"k=1 15", "j=1 15"} { // COORDINATOR_NOT_AVAILABLE
		if got := recv(t, answers, "answer"); got != want {
			t.Fatalf("answered %q, want %q", got, want)
		}
	}
	if got := s.get(); len(got) != 0 {
		t.Fatalf("applied before the high watermark passed: %v", got)
	}
	put(t, r, "k", "2", answers, commits)
	waitBatches(t, f, 3)
	f.set(func(f *fakeLog) { f.hw = f.leo })
	if got := recv(t, answers, "answer"); got != "k=2 0" {
		t.Fatalf("the later write answered %q", got)
	}
	var order []string
	for range 3 {
		order = append(order, recv(t, commits, "Committed"))
	}
	if want := []string{"k=1 0", "j=1 0", "k=2 0"}; !slices.Equal(order, want) {
		t.Fatalf("Committed %v, want %v", order, want)
	}
	live := s.get()
	if want := map[string]string{"k": "2", "j": "1"}; !maps.Equal(live, want) {
		t.Fatalf("live %v, want %v", live, want)
	}
	if loaded := loadAgain(t, f); !maps.Equal(loaded, live) {
		t.Fatalf("a load shows %v, the live shard %v", loaded, live)
	}
}

// A write whose append failed is answered with its code, never TimedOut, and applied
// neither live nor by a load.
func TestFailedAppendAppliedNowhere(t *testing.T) {
	f := newFakeLog(0)
	f.autoCommit = true
	r := startRuntime(t, Config{WriteTimeout: 50 * time.Millisecond})
	s := newKV(t)
	r.Load(LoadSpec{Partition: 0, LeaderEpoch: 0, Log: f, Shard: s})
	testwait.Until(t, 10*time.Second, "serving", func() bool { return len(r.Serving()) == 1 })
	answers, commits := make(chan string, 4), make(chan string, 4)
	f.set(func(f *fakeLog) { f.appendErr = replication.ErrNotEnoughReplicas })
	put(t, r, "k", "1", answers, commits)
	if got := recv(t, commits, "Committed"); got != "k=1 15" {
		t.Fatalf("Committed %q", got)
	}
	f.set(func(f *fakeLog) { f.appendErr = nil })
	put(t, r, "j", "1", answers, commits)
	if got := recv(t, commits, "Committed"); got != "j=1 0" {
		t.Fatalf("Committed %q", got)
	}
	live := s.get()
	if want := map[string]string{"j": "1"}; !maps.Equal(live, want) {
		t.Fatalf("live %v, want %v", live, want)
	}
	if loaded := loadAgain(t, f); !maps.Equal(loaded, live) {
		t.Fatalf("a load shows %v, the live shard %v", loaded, live)
	}
}

// A timed-out write still pending when the partition is unloaded gets NOT_COORDINATOR:
// the next leader's load decides what it became.
func TestTimedOutWriteUnloadedIsNotCoordinator(t *testing.T) {
	f := newFakeLog(0)
	r := startRuntime(t, Config{WriteTimeout: 50 * time.Millisecond})
	r.Load(LoadSpec{Partition: 0, LeaderEpoch: 0, Log: f, Shard: newKV(t)})
	testwait.Until(t, 10*time.Second, "serving", func() bool { return len(r.Serving()) == 1 })
	answers, commits := make(chan string, 4), make(chan string, 4)
	put(t, r, "k", "1", answers, commits)
	if got := recv(t, answers, "answer"); got != "k=1 15" {
		t.Fatalf("answered %q", got)
	}
	r.Unload(0)
	if got := recv(t, commits, "Committed"); got != fmt.Sprintf("k=1 %d", kerr.NotCoordinator.Code) {
		t.Fatalf("Committed %q", got)
	}
}

// A marker answered at its timeout is replayed on the shard once it lands, as a load
// replays it.
func TestTimedOutMarkerReplayedWhenItLands(t *testing.T) {
	f := newFakeLog(0)
	r := startRuntime(t, Config{WriteTimeout: 50 * time.Millisecond})
	s := &txnShard{testShard: testShard{t: t}}
	r.Load(LoadSpec{Partition: 0, LeaderEpoch: 0, Log: f, Shard: s})
	testwait.Until(t, 10*time.Second, "serving", func() bool { return len(r.Serving()) == 1 })
	answered, committed := make(chan int16, 1), make(chan int16, 1)
	submitWait(t, r, 0, func(time.Time, Shard) (struct{}, Result) {
		return struct{}{}, Result{Marker: &MarkerWrite{ProducerID: 7, ProducerEpoch: 2, Commit: true},
			TimedOut:  func(_ time.Time, code int16) Result { answered <- code; return Result{} },
			Committed: func(_ time.Time, code int16) Result { committed <- code; return Result{} }}
	})
	waitBatches(t, f, 1)
	if code := <-answered; code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("answered %d", code)
	}
	if got := s.seen(); len(got) != 0 {
		t.Fatalf("replayed before it landed: %v", got)
	}
	f.set(func(f *fakeLog) { f.hw = f.leo })
	if code := <-committed; code != 0 {
		t.Fatalf("Committed %d", code)
	}
	if got, want := s.seen(), []string{"marker 0 pid 7 epoch 2 commit true"}; !slices.Equal(got, want) {
		t.Fatalf("replayed %v, want %v", got, want)
	}
}

// Writes answered at their timeout stay pending only up to Config.MaxTimedOutWrites:
// while the high watermark stands still past that, a new write is refused without
// being appended (COORDINATOR_NOT_AVAILABLE, applied nowhere), so pending is bounded;
// once the held writes land, writes are appended again.
func TestTimedOutWritesAreBounded(t *testing.T) {
	f := newFakeLog(0)
	r := startRuntime(t, Config{WriteTimeout: 20 * time.Millisecond, MaxTimedOutWrites: 2})
	s := newKV(t)
	r.Load(LoadSpec{Partition: 0, LeaderEpoch: 0, Log: f, Shard: s})
	testwait.Until(t, 10*time.Second, "serving", func() bool { return len(r.Serving()) == 1 })
	answers, commits := make(chan string, 8), make(chan string, 8)
	put(t, r, "a", "1", answers, commits)
	put(t, r, "b", "1", answers, commits)
	for _, want := range []string{"a=1 15", "b=1 15"} {
		if got := recv(t, answers, "answer"); got != want {
			t.Fatalf("answered %q, want %q", got, want)
		}
	}
	put(t, r, "c", "1", answers, commits)
	if got := recv(t, commits, "Committed"); got != "c=1 15" {
		t.Fatalf("the write past the bound: Committed %q, want it refused", got)
	}
	f.mu.Lock()
	n := len(f.batches)
	f.mu.Unlock()
	if n != 2 {
		t.Fatalf("%d batches in the log, want the refused write not appended", n)
	}
	f.set(func(f *fakeLog) { f.hw = f.leo })
	for _, want := range []string{"a=1 0", "b=1 0"} {
		if got := recv(t, commits, "Committed"); got != want {
			t.Fatalf("Committed %q, want %q", got, want)
		}
	}
	f.set(func(f *fakeLog) { f.autoCommit = true; f.hw = f.leo })
	put(t, r, "d", "1", answers, commits)
	if got := recv(t, commits, "Committed"); got != "d=1 0" {
		t.Fatalf("after the held writes landed: Committed %q", got)
	}
	live := s.get()
	if want := map[string]string{"a": "1", "b": "1", "d": "1"}; !maps.Equal(live, want) {
		t.Fatalf("live %v, want %v", live, want)
	}
	if loaded := loadAgain(t, f); !maps.Equal(loaded, live) {
		t.Fatalf("a load shows %v, the live shard %v", loaded, live)
	}
}
