package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Producer id errors (mapped in errors.go).
var (
	// ErrProducerIDsNotAvailable means no block of producer ids arrived from the
	// controller in time; the client retries (COORDINATOR_LOAD_IN_PROGRESS, as Kafka).
	ErrProducerIDsNotAvailable = errors.New("broker: no producer id block available yet")
)

// producerIDPrefetchRatio is the share of a block used before the next one is asked for
// (Kafka's RPCProducerIdManager: 90 %).
const producerIDPrefetchRatio = 0.9

// producerIDBlock is a range [next, end) of producer ids this broker may hand out.
type producerIDBlock struct {
	start, next, end int64
}

// producerIDManager hands out this broker's producer ids from blocks the controller
// allocates (AllocateProducerIds). It asks for the next block in the background once
// 90 % of the current one is used, so InitProducerId rarely waits.
type producerIDManager struct {
	b *Broker

	mu       sync.Mutex
	current  producerIDBlock  // guarded by mu; empty (next == end) when none
	prefetch *producerIDBlock // guarded by mu; the next block, when fetched early
	fetching bool             // guarded by mu; a fetch goroutine runs
	arrived  chan struct{}    // guarded by mu; closed and replaced when a fetch ends
}

func newProducerIDManager(b *Broker) *producerIDManager {
	return &producerIDManager{b: b, arrived: make(chan struct{})}
}

// tryGenerate returns a new producer id when one is at hand, without waiting.
func (m *producerIDManager) tryGenerate() (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.nextLocked()
}

// nextLocked takes the next id of the current (or prefetched) block and starts the
// fetch of the next block at 90 % use. Callers hold mu.
func (m *producerIDManager) nextLocked() (int64, bool) {
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

// generate returns a new producer id, waiting (bounded by ctx) for a block when none is
// left.
func (m *producerIDManager) generate(ctx context.Context) (int64, error) {
	for {
		m.mu.Lock()
		if id, ok := m.nextLocked(); ok {
			m.mu.Unlock()
			return id, nil
		}
		m.startFetchLocked()
		arrived := m.arrived
		m.mu.Unlock()
		select {
		case <-arrived:
		case <-ctx.Done():
			return -1, fmt.Errorf("%w: %v", ErrProducerIDsNotAvailable, ctx.Err())
		case <-m.b.stop:
			return -1, ErrProducerIDsNotAvailable
		}
	}
}

// startFetchLocked starts fetching the next block unless a fetch runs already. Callers
// hold mu.
func (m *producerIDManager) startFetchLocked() {
	if m.fetching {
		return
	}
	m.fetching = true
	m.b.goLoop("producer id block", m.fetch)
}

// fetch asks the controller for a block, retrying with backoff until it gets one or the
// broker stops.
func (m *producerIDManager) fetch() {
	backoff := 50 * time.Millisecond
	for {
		block, err := m.request()
		if err == nil {
			m.mu.Lock()
			m.prefetch, m.fetching = &block, false
			close(m.arrived)
			m.arrived = make(chan struct{})
			m.mu.Unlock()
			m.b.logger.Debug("producer id block allocated", "start", block.start, "end", block.end)
			return
		}
		m.b.logger.Debug("producer id block not allocated yet", "error", err)
		select {
		case <-m.b.stop:
			m.mu.Lock()
			m.fetching = false
			m.mu.Unlock()
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// request sends one AllocateProducerIds to the controller.
func (m *producerIDManager) request() (producerIDBlock, error) {
	epoch := m.b.BrokerEpoch()
	if epoch < 0 {
		return producerIDBlock{}, errors.New("not registered yet")
	}
	ctx, cancel := m.b.waitTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID, req.BrokerEpoch = m.b.cfg.NodeID, epoch
	resp, err := m.b.controllerCall(ctx, req)
	if err != nil {
		return producerIDBlock{}, err
	}
	r := resp.(*kmsg.AllocateProducerIDsResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return producerIDBlock{}, err
	}
	if r.ProducerIDStart < 0 || r.ProducerIDLen <= 0 {
		return producerIDBlock{}, fmt.Errorf("invalid producer id block %d+%d", r.ProducerIDStart, r.ProducerIDLen)
	}
	return producerIDBlock{start: r.ProducerIDStart, next: r.ProducerIDStart, end: r.ProducerIDStart + int64(r.ProducerIDLen)}, nil
}

// ready waits (bounded by ctx) until an id is at hand, without taking one: the
// transaction coordinator takes its ids with tryGenerate on its executor, which must
// not wait.
func (m *producerIDManager) ready(ctx context.Context) error {
	for {
		m.mu.Lock()
		if m.current.next < m.current.end || m.prefetch != nil {
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
		case <-m.b.stop:
			return ErrProducerIDsNotAvailable
		}
	}
}
