package telemetry

import (
	"encoding/base64"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// AcceptedCompressionTypes are the codecs a client may compress its pushes with,
// Kafka's order of preference (zstd, lz4, gzip, snappy); none (0) is always accepted.
var AcceptedCompressionTypes = []int8{4, 3, 1, 2}

// Kafka's fixed limits of the client instance cache (ClientMetricsManager): an
// instance is forgotten once it has neither asked nor pushed for the longer of
// MinExpiry and three push intervals.
const (
	DefaultMaxInstances = 16384
	MinExpiry           = 60 * time.Second
)

// Config sets a Manager's limits.
type Config struct {
	// MaxBytes is telemetry.max.bytes: the largest push, compressed and decompressed.
	MaxBytes int32
	// MaxSeries bounds the series kept across every client; a series past it is
	// dropped (and counted).
	MaxSeries int
	// MaxInstances bounds the client instances kept; the least recently seen is
	// forgotten first (DefaultMaxInstances when 0).
	MaxInstances int
	// NewInstanceID returns a random id for a client that has none.
	NewInstanceID func() [16]byte
	// Now is the clock read at scrape time (time.Now when nil).
	Now func() time.Time
}

// Manager holds the subscriptions and the client instances. Safe for concurrent use;
// mu is a leaf lock.
type Manager struct {
	cfg Config

	mu        sync.Mutex
	subs      []Subscription         // guarded by mu
	version   uint64                 // guarded by mu: bumped at each SetSubscriptions
	instances map[[16]byte]*instance // guarded by mu
	series    int                    // guarded by mu: series kept, across instances
	stats     stats                  // guarded by mu
}

// stats are the manager's own counters, exported with the series.
type stats struct {
	droppedSeries       float64
	unknownSubscription float64
	throttled           float64
	pushErrors          float64
}

// instance is one client instance (guarded by Manager.mu).
type instance struct {
	id           [16]byte
	client       ClientInfo
	version      uint64 // the subscriptions' version it was resolved against
	subscription resolved
	subID        int32
	lastGet      time.Time
	lastPush     time.Time
	lastSeen     time.Time
	terminating  bool
	lastError    int16
	series       map[string]*series // by seriesKey
}

// NewManager returns a Manager with no subscriptions.
func NewManager(cfg Config) *Manager {
	if cfg.MaxInstances <= 0 {
		cfg.MaxInstances = DefaultMaxInstances
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Manager{cfg: cfg, instances: map[[16]byte]*instance{}}
}

// SetSubscriptions replaces the subscriptions; every instance is resolved again at its
// next request, as Kafka's subscription update version makes it.
func (m *Manager) SetSubscriptions(subs []Subscription) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.subs = subs
	m.version++
}

// GetResult is GetTelemetrySubscriptions' answer.
type GetResult struct {
	ErrorCode        int16
	ClientInstanceID [16]byte
	SubscriptionID   int32
	PushIntervalMs   int32
	RequestedMetrics []string
}

// GetSubscriptions answers GetTelemetrySubscriptions for instance id (zero: a new id
// is assigned) of client c at now: THROTTLING_QUOTA_EXCEEDED when the instance asks
// again within its push interval of its last request, unless its last push failed
// with UNKNOWN_SUBSCRIPTION_ID or UNSUPPORTED_COMPRESSION_TYPE.
func (m *Manager) GetSubscriptions(id [16]byte, c ClientInfo, now time.Time) GetResult {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expireLocked(now)
	if id == ([16]byte{}) {
		id = m.newIDLocked()
	}
	in := m.instanceLocked(id, c, now)
	last := in.lastGet
	if in.lastPush.After(last) {
		last = in.lastPush
	}
	interval := time.Duration(in.subscription.intervalMs) * time.Millisecond
	if !last.IsZero() && now.Sub(last) < interval &&
		in.lastError != kerr.UnknownSubscriptionID.Code && in.lastError != kerr.UnsupportedCompressionType.Code {
		m.stats.throttled++
		return GetResult{ErrorCode: kerr.ThrottlingQuotaExceeded.Code, ClientInstanceID: id}
	}
	in.lastGet = now
	in.lastError = 0
	return GetResult{ClientInstanceID: id, SubscriptionID: in.subID, PushIntervalMs: in.subscription.intervalMs,
		RequestedMetrics: append([]string(nil), in.subscription.metrics...)}
}

// Push is one PushTelemetry request.
type Push struct {
	ClientInstanceID [16]byte
	SubscriptionID   int32
	Terminating      bool
	CompressionType  int8
	Metrics          []byte
	// Decompress returns Metrics decompressed (with CompressionType), or an error;
	// an error that is ErrTooLarge is TELEMETRY_TOO_LARGE, any other INVALID_RECORD.
	Decompress func() ([]byte, error)
}

// PushMetrics answers PushTelemetry with Kafka's checks, in Kafka's order: a zero
// instance id is INVALID_REQUEST; a push after a terminating one INVALID_REQUEST; a
// push within the push interval of the last (other than a terminating one, and the
// first after a GetTelemetrySubscriptions) THROTTLING_QUOTA_EXCEEDED; another
// subscription id UNKNOWN_SUBSCRIPTION_ID; an unknown codec UNSUPPORTED_COMPRESSION_TYPE;
// more than MaxBytes TELEMETRY_TOO_LARGE. The metrics are then decoded and kept; a
// payload that does not decode is INVALID_RECORD.
func (m *Manager) PushMetrics(p Push, c ClientInfo, now time.Time) int16 {
	if p.ClientInstanceID == ([16]byte{}) {
		return kerr.InvalidRequest.Code
	}
	code, in := m.checkPush(p, c, now)
	if code != 0 {
		return code
	}
	if len(p.Metrics) == 0 {
		return 0
	}
	// Decompress and decode outside the lock: a push costs no other client its turn.
	points, dropped, code := decodePush(p, m.cfg.MaxBytes)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stats.droppedSeries += float64(dropped)
	if code != 0 {
		in.lastError = code
		m.stats.pushErrors++
		return code
	}
	if m.instances[p.ClientInstanceID] == in { // not expired or evicted meanwhile
		m.recordLocked(in, points)
	}
	return 0
}

func (m *Manager) checkPush(p Push, c ClientInfo, now time.Time) (int16, *instance) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expireLocked(now)
	in := m.instanceLocked(p.ClientInstanceID, c, now)
	code := m.validatePushLocked(in, p, now)
	if code != 0 {
		in.lastError = code
	}
	in.terminating = in.terminating || p.Terminating
	if code == 0 {
		in.lastError = 0
	}
	return code, in
}

func (m *Manager) validatePushLocked(in *instance, p Push, now time.Time) int16 {
	if in.terminating {
		return kerr.InvalidRequest.Code
	}
	// The first push after a GetTelemetrySubscriptions is accepted early: clients
	// jitter their interval.
	accept := in.lastGet.After(in.lastPush) || in.lastPush.IsZero() ||
		now.Sub(in.lastPush) >= time.Duration(in.subscription.intervalMs)*time.Millisecond
	if accept {
		in.lastPush = now
	} else if !p.Terminating {
		m.stats.throttled++
		return kerr.ThrottlingQuotaExceeded.Code
	}
	if p.SubscriptionID != in.subID {
		m.stats.unknownSubscription++
		return kerr.UnknownSubscriptionID.Code
	}
	if p.CompressionType != 0 && !containsCodec(p.CompressionType) {
		return kerr.UnsupportedCompressionType.Code
	}
	if m.cfg.MaxBytes > 0 && len(p.Metrics) > int(m.cfg.MaxBytes) {
		return kerr.TelemetryTooLarge.Code
	}
	return 0
}

func containsCodec(c int8) bool {
	for _, a := range AcceptedCompressionTypes {
		if a == c {
			return true
		}
	}
	return false
}

// instanceLocked returns the instance id, made or resolved again when the
// subscriptions changed since; it is the most recently seen from now on.
func (m *Manager) instanceLocked(id [16]byte, c ClientInfo, now time.Time) *instance {
	in := m.instances[id]
	if in == nil {
		if len(m.instances) >= m.cfg.MaxInstances {
			m.evictOldestLocked()
		}
		in = &instance{id: id, client: c, version: m.version - 1, series: map[string]*series{}}
		m.instances[id] = in
	}
	if in.version != m.version {
		in.version = m.version
		in.subscription = resolve(m.subs, in.client, uuidString(id))
		in.subID = SubscriptionID(in.subscription.metrics, in.subscription.intervalMs, id)
	}
	in.lastSeen = now
	return in
}

func (m *Manager) newIDLocked() [16]byte {
	for {
		id := m.cfg.NewInstanceID()
		if _, taken := m.instances[id]; !taken && id != ([16]byte{}) {
			return id
		}
	}
}

// expiry is how long an instance is kept without a request.
func (in *instance) expiry() time.Duration {
	return max(MinExpiry, 3*time.Duration(in.subscription.intervalMs)*time.Millisecond)
}

// expireLocked forgets the instances (and their series) not seen within their expiry.
func (m *Manager) expireLocked(now time.Time) {
	for id, in := range m.instances {
		if now.Sub(in.lastSeen) > in.expiry() {
			m.forgetLocked(id)
		}
	}
}

func (m *Manager) evictOldestLocked() {
	var oldest *instance
	for _, in := range m.instances {
		if oldest == nil || in.lastSeen.Before(oldest.lastSeen) {
			oldest = in
		}
	}
	if oldest != nil {
		m.forgetLocked(oldest.id)
	}
}

func (m *Manager) forgetLocked(id [16]byte) {
	if in := m.instances[id]; in != nil {
		m.series -= len(in.series)
		delete(m.instances, id)
	}
}

// Instances is the number of client instances kept.
func (m *Manager) Instances() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.instances)
}

// uuidString is a Kafka Uuid as the selectors and labels show it: base64 URL-safe,
// unpadded, as Uuid.toString.
func uuidString(id [16]byte) string {
	return base64.RawURLEncoding.EncodeToString(id[:])
}
