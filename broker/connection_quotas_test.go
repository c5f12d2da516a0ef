package broker

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/fsm"
)

// quotaHarness drives a connectionQuotas with settings and metadata changes of its own.
type quotaHarness struct {
	q        *connectionQuotas
	settings atomic.Pointer[connectionSettings]
	mu       sync.Mutex
	changed  chan struct{}
	stop     chan struct{}
}

func newQuotaHarness(t *testing.T, inter string, protected bool, s connectionSettings) *quotaHarness {
	t.Helper()
	h := &quotaHarness{changed: make(chan struct{}), stop: make(chan struct{})}
	h.settings.Store(&s)
	h.q = newConnectionQuotasWith(inter, protected, func() connectionSettings { return *h.settings.Load() },
		func() <-chan struct{} {
			h.mu.Lock()
			defer h.mu.Unlock()
			return h.changed
		}, hclog.NewNullLogger())
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
func (h *quotaHarness) change(s connectionSettings) {
	h.settings.Store(&s)
	h.mu.Lock()
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
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

func unlimited() connectionSettings {
	return connectionSettings{maxConnections: math.MaxInt32, perIP: math.MaxInt32}
}

func TestConnectionQuotasPerIP(t *testing.T) {
	s := unlimited()
	s.perIP = 2
	s.perIPOverrides = "10.0.0.9:0, 10.0.0.8:4,db.example:1,[::1]:3,unresolvable.example:7"
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
	s.perIPOverrides = "10.0.0.9:1"
	h.change(s)
	if !q.Admit("EXTERNAL", addr("10.0.0.9", 1), h.stop) {
		t.Fatal("the raised override was not applied")
	}
}

func TestConnectionQuotasMaxConnections(t *testing.T) {
	s := unlimited()
	s.maxConnections = 2
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
	s.maxConnections = 3
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
	s.maxConnections = 1
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
	s.maxConnections, s.perIP = 8, 3
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

func TestParseConnectionOverrides(t *testing.T) {
	cases := []struct {
		in   string
		want map[string]int
		err  bool
	}{
		{in: "", want: map[string]int{}},
		{in: "  ", want: map[string]int{}},
		{in: "10.0.0.1:5", want: map[string]int{"10.0.0.1": 5}},
		{in: " a.example : 1 , 10.0.0.2:0", want: map[string]int{"a.example": 1, "10.0.0.2": 0}},
		{in: "::1:5", want: map[string]int{"::1": 5}},
		{in: "[::1]:5", want: map[string]int{"[::1]": 5}},
		{in: "host", err: true},
		{in: "host:x", err: true},
		{in: ":5", err: true},
		{in: "a:1,", err: true},
		{in: "a:99999999999", err: true},
	}
	for _, c := range cases {
		got, err := config.ParseConnectionOverrides(c.in)
		if (err != nil) != c.err {
			t.Errorf("%q: error %v, expected error %v", c.in, err, c.err)
			continue
		}
		if !c.err && fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%q: %v, expected %v", c.in, got, c.want)
		}
	}
	def, _ := config.BrokerDef("max.connections.per.ip.overrides")
	if err := config.CheckValue(def, "10.0.0.1:x"); err == nil || !strings.Contains(err.Error(), "max.connections.per.ip.overrides") {
		t.Fatalf("a bad override was accepted: %v", err)
	}
	if err := config.ValidateDynamicBrokerConfig("max.connections.per.ip.overrides", "10.0.0.1:4", false); err != nil {
		t.Fatalf("a dynamic override was refused: %v", err)
	}
	if err := config.ValidateDynamicBrokerConfig("max.connections", "-1", false); err == nil {
		t.Fatal("max.connections=-1 accepted")
	}
}

// TestNewConnectionQuotas: the static limits are read from the properties, and
// max.connections.per.ip=0 without overrides stops the broker (as Kafka).
func TestNewConnectionQuotas(t *testing.T) {
	specs := []listenerSpec{{Name: "PLAINTEXT"}, {Name: "EXTERNAL"}}
	b := &Broker{logger: hclog.NewNullLogger(), machine: fsm.New(), cfg: Config{Properties: map[string]string{
		"max.connections": "7", "max.connections.per.ip": "3", "listener.name.external.max.connections": "5",
	}}}
	q, err := b.newConnectionQuotas(specs, "PLAINTEXT")
	if err != nil {
		t.Fatal(err)
	}
	if s := q.settings(); s.maxConnections != 7 || s.perIP != 3 || s.perIPOverrides != "" {
		t.Fatalf("settings %+v", s)
	}
	if q.maxOf("EXTERNAL") != 5 || q.maxOf("PLAINTEXT") != math.MaxInt32 || !q.protected || q.interBroker != "PLAINTEXT" {
		t.Fatalf("listener limits %v, protected %v", q.listenerMax, q.protected)
	}
	for _, name := range []string{"listener.name.external.max.connections", "listener.name.sasl_ssl.sasl.server.max.receive.size"} {
		if def, ok := config.ListenerPropertyDef(name); !ok || def.Type != config.TypeInt || !def.ReadOnly {
			t.Errorf("%s: %+v, %v; expected a read-only INT", name, def, ok)
		}
	}
	b.cfg.Properties = map[string]string{"max.connections.per.ip": "0"}
	if _, err := b.newConnectionQuotas(specs, "PLAINTEXT"); !errors.Is(err, config.ErrInvalidBrokerConfig) {
		t.Fatalf("max.connections.per.ip=0 without overrides: %v", err)
	}
	b.cfg.Properties["max.connections.per.ip.overrides"] = "10.0.0.1:2"
	if _, err := b.newConnectionQuotas(specs, "PLAINTEXT"); err != nil {
		t.Fatal(err)
	}
}
