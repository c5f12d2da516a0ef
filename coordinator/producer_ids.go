package coordinator

// The broker's producer ids (Kafka's RPCProducerIdManager): blocks the controller
// allocates (AllocateProducerIds), handed out one id at a time, the next block asked
// for in the background once 90 % of the current one is used, so InitProducerId rarely
// waits.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// ErrProducerIDsNotAvailable means no block of producer ids arrived from the controller
// in time; the client retries (COORDINATOR_LOAD_IN_PROGRESS, as Kafka).
var ErrProducerIDsNotAvailable = errors.New("coordinator: no producer id block available yet")

// producerIDPrefetchRatio is the share of a block used before the next one is asked for
// (Kafka's RPCProducerIdManager: 90 %).
const producerIDPrefetchRatio = 0.9

// ProducerIDsConfig configures ProducerIDs.
type ProducerIDsConfig struct {
	// Allocate asks the controller for a block: [start, start+length).
	Allocate func() (start int64, length int32, err error)
	// Go runs fn on a goroutine the broker waits for when it stops; Stop is closed then.
	Go     func(name string, fn func())
	Stop   <-chan struct{}
	Logger hclog.Logger
}

// producerIDBlock is a range [next, end) of producer ids this broker may hand out.
type producerIDBlock struct {
	start, next, end int64
}

// ProducerIDs hands out this broker's producer ids. Safe for concurrent use.
type ProducerIDs struct {
	cfg ProducerIDsConfig

	mu       sync.Mutex
	current  producerIDBlock  // guarded by mu; empty (next == end) when none
	prefetch *producerIDBlock // guarded by mu; the next block, when fetched early
	fetching bool             // guarded by mu; a fetch goroutine runs
	arrived  chan struct{}    // guarded by mu; closed and replaced when a fetch ends
}

// NewProducerIDs returns a manager with no block yet; the first need asks for one.
func NewProducerIDs(cfg ProducerIDsConfig) *ProducerIDs {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	return &ProducerIDs{cfg: cfg, arrived: make(chan struct{})}
}

// TryGenerate returns a new producer id when one is at hand, without waiting.
func (m *ProducerIDs) TryGenerate() (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.nextLocked()
}

// nextLocked takes the next id of the current (or prefetched) block and starts the
// fetch of the next block at 90 % use. Callers hold mu.
func (m *ProducerIDs) nextLocked() (int64, bool) {
	if m.current.next >= m.current.end && m.prefetch != nil {
		m.current, m.prefetch = *m.prefetch, nil
	}
	if m.current.next >= m.current.end {
		return -1, false
	}
	id := m.current.next
	m.current.next++
	used := float64(m.current.next-m.current.start) / float64(m.current.end-m.current.start)
	if used >= producerIDPrefetchRatio && m.prefetch == nil {
		m.startFetchLocked()
	}
	return id, true
}

// Generate returns a new producer id, waiting (bounded by ctx) for a block when none is
// left.
func (m *ProducerIDs) Generate(ctx context.Context) (int64, error) {
	var id int64
	err := m.waitFor(ctx, func() bool {
		var ok bool
		id, ok = m.nextLocked()
		return ok
	})
	return id, err
}

// Ready waits (bounded by ctx) until an id is at hand, without taking one: the
// transaction coordinator takes its ids with TryGenerate on its executor, which must
// not wait.
func (m *ProducerIDs) Ready(ctx context.Context) error {
	return m.waitFor(ctx, func() bool { return m.current.next < m.current.end || m.prefetch != nil })
}

// waitFor waits (bounded by ctx) until done, called with mu held, reports true,
// fetching blocks meanwhile.
func (m *ProducerIDs) waitFor(ctx context.Context, done func() bool) error {
	for {
		m.mu.Lock()
		if done() {
			m.mu.Unlock()
			return nil
		}
		m.startFetchLocked()
		arrived := m.arrived
		m.mu.Unlock()
		select {
		case <-arrived:
		case <-ctx.Done():
			return fmt.Errorf("%w: %v", ErrProducerIDsNotAvailable, ctx.Err())
		case <-m.cfg.Stop:
			return ErrProducerIDsNotAvailable
		}
	}
}

// startFetchLocked starts fetching the next block unless a fetch runs already. Callers
// hold mu.
func (m *ProducerIDs) startFetchLocked() {
	if m.fetching {
		return
	}
	m.fetching = true
	m.cfg.Go("producer id block", m.fetch)
}

// fetch asks the controller for a block, retrying with backoff until it gets one or the
// broker stops.
func (m *ProducerIDs) fetch() {
	backoff := 50 * time.Millisecond
	for {
		block, err := m.request()
		if err == nil {
			m.mu.Lock()
			m.prefetch, m.fetching = &block, false
			close(m.arrived)
			m.arrived = make(chan struct{})
			m.mu.Unlock()
			m.cfg.Logger.Debug("producer id block allocated", "start", block.start, "end", block.end)
			return
		}
		m.cfg.Logger.Debug("producer id block not allocated yet", "error", err)
		select {
		case <-m.cfg.Stop:
			m.mu.Lock()
			m.fetching = false
			m.mu.Unlock()
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// request asks for one block and checks it.
func (m *ProducerIDs) request() (producerIDBlock, error) {
	start, length, err := m.cfg.Allocate()
	if err != nil {
		return producerIDBlock{}, err
	}
	if start < 0 || length <= 0 {
		return producerIDBlock{}, fmt.Errorf("invalid producer id block %d+%d", start, length)
	}
	return producerIDBlock{start: start, next: start, end: start + int64(length)}, nil
}
