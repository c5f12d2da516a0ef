package auth

import (
	"net"
	"sync"
	"time"
)

// FailureDelay delays answers to failed authentications
// (connection.failed.authentication.delay.ms), per remote host: failures from one
// address are answered at most once per delay, so a client retrying passwords in a
// loop or over many connections gets one answer per delay. Parallel failures queue up
// without a cap: the i-th waits i delays. What they cost while they wait (a connection
// each, its reader already gone) is bounded by max.connections.per.ip. Safe for
// concurrent use.
type FailureDelay struct {
	base time.Duration
	mu   sync.Mutex
	// next is, per remote host, when its next failure may be answered; guarded by mu.
	next map[string]time.Time
}

// maxTrackedHosts bounds the limiter's memory; past it, expired entries are dropped.
const maxTrackedHosts = 10000

// NewFailureDelay returns a FailureDelay of base per failure (≤ 0: none).
func NewFailureDelay(base time.Duration) *FailureDelay {
	return &FailureDelay{base: base, next: map[string]time.Time{}}
}

// Delay returns how long to hold back the failure answer to remote; 0 for a nil
// FailureDelay.
func (l *FailureDelay) Delay(remote net.Addr) time.Duration {
	if l == nil || l.base <= 0 {
		return 0
	}
	host := remote.String()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.next) >= maxTrackedHosts {
		for h, t := range l.next {
			if t.Before(now) {
				delete(l.next, h)
			}
		}
	}
	at := now.Add(l.base)
	if n, ok := l.next[host]; ok && n.After(now) {
		at = n.Add(l.base) // one delay after the host's last scheduled answer
	}
	l.next[host] = at
	return at.Sub(now)
}
