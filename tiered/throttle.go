package tiered

import (
	"context"
	"sync"
	"time"
)

// Throttle paces the bytes copied to remote storage to a rate
// (remote.log.manager.copy.max.bytes.per.second): each copy reserves its bytes and
// starts once the copies before it have had their time at the rate. Safe for concurrent
// use; no lock is held while waiting.
type Throttle struct {
	mu   sync.Mutex
	rate float64   // bytes per second
	next time.Time // when the next reservation may start; guarded by mu
	now  func() time.Time
}

// NewThrottle returns a throttle of bytesPerSecond (≤ 0: nil, no throttling).
func NewThrottle(bytesPerSecond int64, now func() time.Time) *Throttle {
	if bytesPerSecond <= 0 {
		return nil
	}
	return &Throttle{rate: float64(bytesPerSecond), now: now}
}

// Wait reserves n bytes and waits until they may be copied, or ctx ends.
func (t *Throttle) Wait(ctx context.Context, n int64) error {
	t.mu.Lock()
	now := t.now()
	start := t.next
	if start.Before(now) {
		start = now
	}
	t.next = start.Add(time.Duration(float64(n) / t.rate * float64(time.Second)))
	t.mu.Unlock()
	if d := start.Sub(now); d > 0 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
