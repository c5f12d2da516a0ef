package rpc

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// quotaHarness drives a ConnectionQuotas with settings and metadata changes of its own.
type quotaHarness struct {
	q        *ConnectionQuotas
	settings atomic.Pointer[ConnectionSettings]
	mu       sync.Mutex
	changed  chan struct{}
	stop     chan struct{}
}

func newQuotaHarness(t *testing.T, inter string, protected bool, s ConnectionSettings) *quotaHarness {
	t.Helper()
	h := &quotaHarness{changed: make(chan struct{}), stop: make(chan struct{})}
	h.settings.Store(&s)
	h.q = NewConnectionQuotas(ConnectionQuotaConfig{InterBroker: inter, Protected: protected,
		Settings: func() ConnectionSettings { return *h.settings.Load() },
		Changed: func() <-chan struct{} {
			h.mu.Lock()
			defer h.mu.Unlock()
			return h.changed
		}, ParseOverrides: parseOverrides, Logger: hclog.NewNullLogger()})
	h.q.resolve = func(host string) ([]netip.Addr, error) {
		if host == "db.example" {
			return []netip.Addr{netip.MustParseAddr("10.9.9.9"), netip.MustParseAddr("::ffff:10.9.9.8")}, nil
		}
		return nil, errors.New("no such host")
	}
	t.Cleanup(func() { close(h.stop) })
	return h
}

// change sets new settings and signals a metadata change.
func (h *quotaHarness) change(s ConnectionSettings) {
	h.settings.Store(&s)
	h.mu.Lock()
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
}

// parseOverrides parses host:count,... as config.ParseConnectionOverrides does for the
// values these tests use.
func parseOverrides(s string) (map[string]int, error) {
	out := map[string]int{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, e := range strings.Split(s, ",") {
		i := strings.LastIndex(e, ":")
		n, err := strconv.Atoi(strings.TrimSpace(e[i+1:]))
		if i < 0 || err != nil {
			return nil, fmt.Errorf("bad override %q", e)
		}
		out[strings.TrimSpace(e[:i])] = n
	}
	return out, nil
}

func addr(ip string, port int) net.Addr {
	return &net.TCPAddr{IP: net.ParseIP(ip), Port: port}
}

// admitAsync runs Admit on its own goroutine; the channel gets its answer.
func (h *quotaHarness) admitAsync(listener string, remote net.Addr) <-chan bool {
	ch := make(chan bool, 1)
	stop := h.stop
	go func() { ch <- h.q.Admit(listener, remote, stop) }()
	return ch
}

// expectHeld checks that an asynchronous Admit has not answered within a short wait.
func expectHeld(t *testing.T, ch <-chan bool) {
	t.Helper()
	select {
	case ok := <-ch:
		t.Fatalf("Admit answered %v at the limit, expected it to wait", ok)
	case <-time.After(100 * time.Millisecond):
	}
}

// expectAnswer waits for an asynchronous Admit's answer.
func expectAnswer(t *testing.T, ch <-chan bool, want bool) {
	t.Helper()
	select {
	case ok := <-ch:
		if ok != want {
			t.Fatalf("Admit answered %v, expected %v", ok, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Admit still waits")
	}
}

func unlimited() ConnectionSettings {
	return ConnectionSettings{MaxConnections: math.MaxInt32, PerIP: math.MaxInt32}
}

func TestConnectionQuotasPerIP(t *testing.T) {
	s := unlimited()
	s.PerIP = 2
	s.PerIPOverrides = "10.0.0.9:0, 10.0.0.8:4,db.example:1,[::1]:3,unresolvable.example:7"
	h := newQuotaHarness(t, "INTERNAL", true, s)
	q := h.q
	for i := range 2 {
		if !q.Admit("EXTERNAL", addr("10.0.0.1", 1000+i), h.stop) {
			t.Fatalf("connection %d within max.connections.per.ip refused", i+1)
		}
	}
	if q.Admit("INTERNAL", addr("10.0.0.1", 2000), h.stop) {
		t.Fatal("a third connection from one address admitted (on another listener)")
	}
	if !q.Admit("EXTERNAL", addr("10.0.0.2", 1000), h.stop) {
		t.Fatal("another address refused")
	}
	q.Release("EXTERNAL", addr("10.0.0.1", 1000))
	if !q.Admit("EXTERNAL", addr("10.0.0.1", 3000), h.stop) {
		t.Fatal("refused after a connection closed")
	}
	cases := []struct {
		ip   string
		want int
	}{
		{"10.0.0.9", 0}, {"10.0.0.8", 4}, {"10.9.9.9", 1}, {"10.9.9.8", 1}, {"::1", 3},
	}
	for _, c := range cases {
		n := 0
		for q.Admit("EXTERNAL", addr(c.ip, 5000+n), h.stop) {
			if n++; n > 10 {
				break
			}
		}
		if n != c.want {
			t.Errorf("%s: %d connections admitted, expected %d", c.ip, n, c.want)
		}
	}
	if q.Admit("EXTERNAL", addr("::ffff:10.0.0.8", 1), h.stop) {
		t.Fatal("an IPv4-mapped address escaped its IPv4 address's limit")
	}
	// A dynamic change applies to the next connection.
	s.PerIPOverrides = "10.0.0.9:1"
	h.change(s)
	if !q.Admit("EXTERNAL", addr("10.0.0.9", 1), h.stop) {
		t.Fatal("the raised override was not applied")
	}
}

func TestConnectionQuotasMaxConnections(t *testing.T) {
	s := unlimited()
	s.MaxConnections = 2
	h := newQuotaHarness(t, "INTERNAL", true, s)
	q := h.q
	for i := range 2 {
		if !q.Admit("EXTERNAL", addr("10.0.0.1", i), h.stop) {
			t.Fatal("refused within max.connections")
		}
	}
	held := h.admitAsync("EXTERNAL", addr("10.0.0.2", 1))
	expectHeld(t, held)
	// The inter-broker listener is protected: admitted at the limit, and counted.
	if !q.Admit("INTERNAL", addr("10.0.0.3", 1), h.stop) {
		t.Fatal("the inter-broker listener was held back at max.connections")
	}
	q.Release("EXTERNAL", addr("10.0.0.1", 0))
	expectHeld(t, held) // 1 EXTERNAL + 1 INTERNAL: still at the limit
	q.Release("INTERNAL", addr("10.0.0.3", 1))
	expectAnswer(t, held, true)

	// A raised limit lets a held accept go on without any close.
	held = h.admitAsync("EXTERNAL", addr("10.0.0.2", 2))
	expectHeld(t, held)
	s.MaxConnections = 3
	h.change(s)
	expectAnswer(t, held, true)

	// Stop ends a wait: Admit answers false and stops counting itself as waiting.
	held = h.admitAsync("EXTERNAL", addr("10.0.0.2", 3))
	expectHeld(t, held)
	close(h.stop)
	h.stop = make(chan struct{})
	expectAnswer(t, held, false)
	q.mu.Lock()
	waiting, total := q.waiting, q.total
	q.mu.Unlock()
	if waiting != 0 || total != 3 {
		t.Fatalf("waiting %d, total %d after the stop; expected 0 and 3", waiting, total)
	}
}

// TestConnectionQuotasUnprotected: with the inter-broker listener the only one it is
// not exempt (Kafka protects it only when there are others); a listener's own limit
// holds it back too.
func TestConnectionQuotasUnprotected(t *testing.T) {
	s := unlimited()
	s.MaxConnections = 1
	h := newQuotaHarness(t, "PLAINTEXT", false, s)
	if !h.q.Admit("PLAINTEXT", addr("10.0.0.1", 1), h.stop) {
		t.Fatal("refused within max.connections")
	}
	held := h.admitAsync("PLAINTEXT", addr("10.0.0.1", 2))
	expectHeld(t, held)
	h.q.Release("PLAINTEXT", addr("10.0.0.1", 1))
	expectAnswer(t, held, true)

	h = newQuotaHarness(t, "INTERNAL", true, unlimited())
	h.q.listenerMax["INTERNAL"] = 1
	if !h.q.Admit("INTERNAL", addr("10.0.0.1", 1), h.stop) {
		t.Fatal("refused within the listener's limit")
	}
	held = h.admitAsync("INTERNAL", addr("10.0.0.1", 2))
	expectHeld(t, held)
	if !h.q.Admit("EXTERNAL", addr("10.0.0.1", 3), h.stop) {
		t.Fatal("another listener was held back by INTERNAL's own limit")
	}
	h.q.Release("INTERNAL", addr("10.0.0.1", 1))
	expectAnswer(t, held, true)
}

// TestConnectionQuotasConcurrent: many goroutines admitting and releasing at once never
// let more than max.connections in, and leave every count at zero (-race).
func TestConnectionQuotasConcurrent(t *testing.T) {
	s := unlimited()
	s.MaxConnections, s.PerIP = 8, 3
	h := newQuotaHarness(t, "INTERNAL", true, s)
	var open, peak atomic.Int64
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			remote := addr(fmt.Sprintf("10.0.%d.1", g%5), g)
			for range 200 {
				if !h.q.Admit("EXTERNAL", remote, h.stop) {
					continue
				}
				n := open.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				open.Add(-1)
				h.q.Release("EXTERNAL", remote)
			}
		}()
	}
	wg.Wait()
	if p := peak.Load(); p > 8 {
		t.Fatalf("%d connections open at once with max.connections=8", p)
	}
	h.q.mu.Lock()
	defer h.q.mu.Unlock()
	if h.q.total != 0 || len(h.q.perIP) != 0 || len(h.q.perListener) != 0 || h.q.waiting != 0 {
		t.Fatalf("counts left: total %d, per IP %v, per listener %v, waiting %d", h.q.total, h.q.perIP, h.q.perListener, h.q.waiting)
	}
}
