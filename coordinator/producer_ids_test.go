package coordinator

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
)

// blockSource is a controller handing out blocks of size ids, or failing while down.
type blockSource struct {
	mu    sync.Mutex
	next  int64
	size  int32
	calls int
	down  bool
	wg    sync.WaitGroup
	stop  chan struct{}
}

func (s *blockSource) allocate() (int64, int32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.down {
		return 0, 0, errors.New("no controller")
	}
	start := s.next
	s.next += int64(s.size)
	return start, s.size, nil
}

func (s *blockSource) callCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func newTestProducerIDs(t *testing.T, s *blockSource) *ProducerIDs {
	s.stop = make(chan struct{})
	t.Cleanup(func() { close(s.stop); s.wg.Wait() })
	return NewProducerIDs(ProducerIDsConfig{Allocate: s.allocate, Stop: s.stop,
		Go: func(_ string, fn func()) { s.wg.Add(1); go func() { defer s.wg.Done(); fn() }() }})
}

// Ids come in order; the next block is asked for at 90 % use of the current one, so
// the ids after the block's end are at hand without waiting.
func TestProducerIDsPrefetchTheNextBlock(t *testing.T) {
	src := &blockSource{next: 1000, size: 10}
	m := newTestProducerIDs(t, src)
	if _, ok := m.TryGenerate(); ok {
		t.Fatal("an id before any block")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for want := int64(1000); want < 1009; want++ {
		id, err := m.Generate(ctx)
		if err != nil || id != want {
			t.Fatalf("id %d %v, want %d", id, err, want)
		}
	}
	// 9 of 10 used: the next block is on its way.
	testwait.Until(t, 10*time.Second, "the prefetch", func() bool { return src.callCount() == 2 })
	testwait.Until(t, 10*time.Second, "the prefetched block", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.prefetch != nil
	})
	for _, want := range []int64{1009, 1010, 1011} {
		if id, ok := m.TryGenerate(); !ok || id != want {
			t.Fatalf("id %d %v, want %d", id, ok, want)
		}
	}
}

// Without a controller, Generate and Ready give up when the context ends, with
// ErrProducerIDsNotAvailable (COORDINATOR_LOAD_IN_PROGRESS: the client retries); an
// invalid block is not used.
func TestProducerIDsNotAvailableWithoutABlock(t *testing.T) {
	src := &blockSource{down: true, size: 10}
	m := newTestProducerIDs(t, src)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := m.Generate(ctx); !errors.Is(err, ErrProducerIDsNotAvailable) {
		t.Fatalf("generate: %v", err)
	}
	if err := m.Ready(ctx); !errors.Is(err, ErrProducerIDsNotAvailable) {
		t.Fatalf("ready: %v", err)
	}
	if _, err := (&ProducerIDs{cfg: ProducerIDsConfig{Allocate: func() (int64, int32, error) { return 5, 0, nil }}}).request(); err == nil {
		t.Fatal("an empty block accepted")
	}
	src.mu.Lock()
	src.down = false
	src.mu.Unlock()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Ready(ctx); err != nil {
		t.Fatalf("ready once the controller answers: %v", err)
	}
	if id, ok := m.TryGenerate(); !ok || id != 0 {
		t.Fatalf("id %d %v after ready", id, ok)
	}
}
