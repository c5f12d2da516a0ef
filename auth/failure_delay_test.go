package auth

import (
	"net"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestFailureDelayPerHost: failures from one host, however many at once, are
// answered one delay apart with no cap on how far behind they fall; another host has
// its own schedule.
func TestFailureDelayPerHost(t *testing.T) {
	const base = time.Hour // every earlier answer is still in the future
	l := NewFailureDelay(base)
	host := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 1000}
	const n = 40
	ats := make([]time.Time, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := range n {
		wg.Add(1)
		go func() { // parallel connections: another port of the same host each
			defer wg.Done()
			remote := &net.TCPAddr{IP: host.IP, Port: host.Port + i}
			mu.Lock() // a delay and its clock reading together
			defer mu.Unlock()
			ats[i] = time.Now().Add(l.Delay(remote))
		}()
	}
	wg.Wait()
	slices.SortFunc(ats, time.Time.Compare)
	for i := 1; i < n; i++ {
		if gap := ats[i].Sub(ats[i-1]); gap < base-time.Second {
			t.Fatalf("answers %d and %d are %s apart, less than the delay %s", i, i+1, gap, base)
		}
	}
	if d := l.Delay(&net.TCPAddr{IP: net.IPv4(192, 0, 2, 2), Port: 1}); d > base {
		t.Fatalf("another host waits %s, more than one delay", d)
	}
	if d := (*FailureDelay)(nil).Delay(host); d != 0 {
		t.Fatalf("no limiter delays %s", d)
	}
}
