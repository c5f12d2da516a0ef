package segment

import (
	"testing"
	"time"
)

// The I/O throttle holds its callers to the rate: 2 MB at 10 MB/s cannot take less than
// about 200 ms (a lower bound only: a loaded machine is slower, never faster).
func TestIOThrottleHoldsTheRate(t *testing.T) {
	th := NewIOThrottle(10e6, make(chan struct{}))
	start := time.Now()
	for i := 0; i < 20; i++ {
		th.Wait(100_000)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("2 MB passed a 10 MB/s throttle in %v", d)
	}
	unlimited := NewIOThrottle(1.7976931348623157e308, nil)
	unlimited.Wait(1 << 40) // returns at once
}
