package rpc

// Connection limits, Kafka's ConnectionQuotas: max.connections over every listener,
// listener.name.<listener>.max.connections per listener, max.connections.per.ip and its
// overrides per remote address. At a broker or listener limit the listener stops
// accepting until a connection closes (Kafka's back-pressure: later clients wait in the
// operating system's accept queue); the inter-broker listener is exempt from
// max.connections when there are other listeners, so replication and controller calls
// always get through. A connection past its address's limit is closed as soon as it is
// accepted.

import (
	"context"
	"math"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// ConnectionSettings are the dynamic connection limits in force (per-broker dynamic
// config, then the cluster default, then the static value).
type ConnectionSettings struct {
	MaxConnections int    // max.connections
	PerIP          int    // max.connections.per.ip
	PerIPOverrides string // max.connections.per.ip.overrides, unparsed
}

// ConnectionQuotaConfig are the sources of a ConnectionQuotas.
type ConnectionQuotaConfig struct {
	// InterBroker is the inter-broker listener; Protected exempts it from
	// max.connections (the broker has other listeners: Kafka's protectedListener).
	InterBroker string
	Protected   bool
	// ListenerMax is listener.name.<listener>.max.connections by listener name; a
	// listener without one is unlimited.
	ListenerMax map[string]int
	// Settings returns the limits in force; Changed returns a channel closed at the
	// next change that may change them (a metadata change).
	Settings func() ConnectionSettings
	Changed  func() <-chan struct{}
	// ParseOverrides parses a validated max.connections.per.ip.overrides value into
	// limits by host name or address.
	ParseOverrides func(string) (map[string]int, error)
	Logger         hclog.Logger
}

// ConnectionQuotas admits the connections of every listener of the broker
// (ConnectionLimiter). All methods are safe for concurrent use; mu is a leaf lock
// and is never held while waiting, logging or resolving a host name.
type ConnectionQuotas struct {
	// interBroker is the inter-broker listener; exempt from max.connections when
	// protected (the broker has other listeners: Kafka's protectedListener).
	interBroker string
	protected   bool
	// listenerMax is listener.name.<listener>.max.connections by listener name, read at
	// start; a listener without one is unlimited.
	listenerMax map[string]int
	// settings returns the limits in force; changed returns a channel closed at the
	// next metadata change, which may change them.
	settings func() ConnectionSettings
	changed  func() <-chan struct{}
	// parse parses max.connections.per.ip.overrides; resolve looks up a host name it
	// names.
	parse   func(string) (map[string]int, error)
	resolve func(host string) ([]netip.Addr, error)
	log     hclog.Logger

	// overrides is the last max.connections.per.ip.overrides parsed and resolved.
	overrides atomic.Pointer[ipOverrides]

	mu sync.Mutex
	// total counts the admitted connections on every listener; guarded by mu.
	total int
	// perListener and perIP count admitted connections by listener and by remote
	// address; entries at zero are removed. Guarded by mu.
	perListener map[string]int
	perIP       map[netip.Addr]int
	// waiting counts accept loops held back at a limit; freed is closed and replaced
	// by a Release while any wait. Guarded by mu.
	waiting int
	freed   chan struct{}
	// lastRefusal and refusals throttle the log of refused connections to one line per
	// refusalLogInterval; guarded by mu.
	lastRefusal time.Time
	refusals    int
}

// refusalLogInterval is the least time between two log lines about refused or held
// connections: a client looping on connect must not flood the log.
const refusalLogInterval = 10 * time.Second

// ipOverrides is a parsed max.connections.per.ip.overrides value.
type ipOverrides struct {
	raw   string
	limit map[netip.Addr]int
}

// NewConnectionQuotas returns the quotas of cfg, with no connection admitted yet.
func NewConnectionQuotas(cfg ConnectionQuotaConfig) *ConnectionQuotas {
	q := &ConnectionQuotas{
		interBroker: cfg.InterBroker,
		protected:   cfg.Protected,
		listenerMax: map[string]int{},
		settings:    cfg.Settings,
		changed:     cfg.Changed,
		parse:       cfg.ParseOverrides,
		resolve:     lookupHost,
		log:         cfg.Logger,
		perListener: map[string]int{},
		perIP:       map[netip.Addr]int{},
		freed:       make(chan struct{}),
	}
	for name, n := range cfg.ListenerMax {
		q.listenerMax[name] = n
	}
	return q
}

// Admit implements ConnectionLimiter. While the broker or the listener is at its
// limit it waits for a connection to close, a metadata change (a raised limit) or stop;
// then a remote address at its limit is refused.
func (q *ConnectionQuotas) Admit(listener string, remote net.Addr, stop <-chan struct{}) bool {
	ip := remoteIP(remote)
	held := false
	for {
		changed := q.changed()
		s := q.settings()
		perIP := s.PerIP
		if n, ok := q.ipOverrides(s.PerIPOverrides).limit[ip]; ok {
			perIP = n
		}
		q.mu.Lock()
		if q.slotAvailableLocked(listener, s) {
			if held {
				q.waiting--
			}
			if q.perIP[ip] >= perIP {
				logNow, skipped := q.refusalLocked()
				q.mu.Unlock()
				if logNow {
					q.log.Info("refused a connection: its address has the configured maximum of connections (max.connections.per.ip)",
						"listener", listener, "remote", remote.String(), "max", perIP, "refused_since_last_line", skipped)
				}
				return false
			}
			q.total++
			q.perListener[listener]++
			q.perIP[ip]++
			q.mu.Unlock()
			return true
		}
		if !held {
			q.waiting++
			held = true
		}
		freed := q.freed
		logNow, _ := q.refusalLocked()
		total := q.total
		q.mu.Unlock()
		if logNow {
			q.log.Info("max.connections reached: accepting waits until a connection closes",
				"listener", listener, "connections", total, "max", s.MaxConnections, "listener_max", q.maxOf(listener))
		}
		select {
		case <-freed:
		case <-changed:
		case <-stop:
			q.mu.Lock()
			q.waiting--
			q.mu.Unlock()
			return false
		}
	}
}

// Release implements ConnectionLimiter.
func (q *ConnectionQuotas) Release(listener string, remote net.Addr) {
	ip := remoteIP(remote)
	q.mu.Lock()
	defer q.mu.Unlock()
	q.total--
	if q.perListener[listener]--; q.perListener[listener] <= 0 {
		delete(q.perListener, listener)
	}
	if q.perIP[ip]--; q.perIP[ip] <= 0 {
		delete(q.perIP, ip)
	}
	if q.waiting > 0 {
		close(q.freed)
		q.freed = make(chan struct{})
	}
}

// slotAvailableLocked is Kafka's connectionSlotAvailable: the listener is under its own
// limit, and the broker under max.connections unless the listener is the protected
// inter-broker one. The caller holds q.mu.
func (q *ConnectionQuotas) slotAvailableLocked(listener string, s ConnectionSettings) bool {
	if q.perListener[listener] >= q.maxOf(listener) {
		return false
	}
	if q.protected && listener == q.interBroker {
		return true
	}
	return q.total < s.MaxConnections
}

// maxOf is the listener's own limit.
func (q *ConnectionQuotas) maxOf(listener string) int {
	if n, ok := q.listenerMax[listener]; ok {
		return n
	}
	return math.MaxInt32
}

// refusalLocked reports whether a refused or held connection is logged now, and how
// many were not logged since the last line. The caller holds q.mu.
func (q *ConnectionQuotas) refusalLocked() (logNow bool, skipped int) {
	now := time.Now()
	if now.Sub(q.lastRefusal) < refusalLogInterval {
		q.refusals++
		return false, 0
	}
	skipped, q.refusals, q.lastRefusal = q.refusals, 0, now
	return true, skipped
}

// ipOverrides returns raw parsed and resolved, from the cache when raw is unchanged.
// A host name that does not resolve is left out with a warning (a configuration
// problem, logged once per value).
func (q *ConnectionQuotas) ipOverrides(raw string) *ipOverrides {
	if o := q.overrides.Load(); o != nil && o.raw == raw {
		return o
	}
	o := &ipOverrides{raw: raw, limit: map[netip.Addr]int{}}
	hosts, _ := q.parse(raw) // validated when set
	for host, n := range hosts {
		if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
			o.limit[ip.Unmap()] = n
			continue
		}
		ips, err := q.resolve(host)
		if err != nil || len(ips) == 0 {
			q.log.Warn("max.connections.per.ip.overrides names a host that does not resolve: its entry is ignored", "host", host, "error", err)
			continue
		}
		for _, ip := range ips {
			o.limit[ip.Unmap()] = n
		}
	}
	q.overrides.Store(o)
	return o
}

// lookupHost resolves a host name of max.connections.per.ip.overrides.
func lookupHost(host string) ([]netip.Addr, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

// remoteIP is the address of a connection's remote end; the zero Addr when it has none
// (an in-memory pipe).
func remoteIP(a net.Addr) netip.Addr {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.AddrPort().Addr().Unmap()
	}
	host := a.String()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	ip, _ := netip.ParseAddr(host)
	return ip.Unmap()
}

var _ ConnectionLimiter = (*ConnectionQuotas)(nil)
