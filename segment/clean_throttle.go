package segment

import (
	"math"
	"sync"
	"time"
)

// IOThrottle is log.cleaner.io.max.bytes.per.second, shared by the cleaner threads
// (Kafka's Throttler): callers report bytes (CleanOptions.Throttle) and sleep when
// ahead of the rate. Safe for concurrent use.
type IOThrottle struct {
	stop <-chan struct{}

	mu     sync.Mutex
	rate   float64 // bytes per second; guarded by mu (SetRate)
	start  time.Time
	amount float64
}

// NewIOThrottle returns a throttle at rate bytes per second (not positive, or
// math.MaxFloat64: unlimited) whose sleeps end early once stop is closed.
func NewIOThrottle(rate float64, stop <-chan struct{}) *IOThrottle {
	return &IOThrottle{rate: rate, stop: stop, start: time.Now()}
}

// SetRate changes the rate (a dynamic log.cleaner.io.max.bytes.per.second); a new rate
// starts a new window.
func (t *IOThrottle) SetRate(rate float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if rate != t.rate {
		t.rate, t.start, t.amount = rate, time.Now(), 0
	}
}

// Wait counts n more bytes and sleeps while the callers are ahead of the rate.
func (t *IOThrottle) Wait(n int64) {
	t.mu.Lock()
	if t.rate <= 0 || t.rate >= math.MaxFloat64/2 {
		t.mu.Unlock()
		return
	}
	now := time.Now()
	t.amount += float64(n)
	elapsed := now.Sub(t.start)
	ahead := time.Duration(t.amount/t.rate*float64(time.Second)) - elapsed
	if elapsed > time.Second && ahead <= 0 {
		t.start, t.amount = now, 0 // a new window
	}
	t.mu.Unlock()
	if ahead > 10*time.Millisecond {
		timer := time.NewTimer(ahead)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-t.stop:
		}
	}
}
