package auth

import (
	"strings"
	"sync"
	"time"
)

// QuotaManager keeps the rates of quota-limited clients, one per quota key and matched
// entity (Kafka's sensors). Safe for concurrent use; its lock is a leaf.
type QuotaManager struct {
	numSamples int
	windowMs   int64

	mu      sync.Mutex
	sensors map[sensorKey]*sensor
	inserts int
}

type sensorKey struct {
	key            string
	user, clientID string
	hasUser        bool
	hasClientID    bool
}

type sensor struct {
	rate   *Rate
	lastMs int64
}

// sensorIdleMs is how long an unused sensor is kept (Kafka: one hour).
const sensorIdleMs = 3600 * 1000

// NewQuotaManager returns a manager measuring over numSamples windows of windowMs.
func NewQuotaManager(numSamples int, windowMs int64) *QuotaManager {
	return &QuotaManager{numSamples: max(numSamples, 1), windowMs: max(windowMs, 1), sensors: map[sensorKey]*sensor{}}
}

// Record adds value to the rate of key for the matched entity of a connection (user
// and clientID are the connection's) and returns the throttle time in milliseconds the
// rate now calls for against quota, at most one window.
func (m *QuotaManager) Record(key string, matched QuotaEntity, user, clientID string, quota, value float64, nowMs int64) int64 {
	sk := sensorKey{key: key, hasUser: matched.HasUser, hasClientID: matched.HasClientID}
	if matched.HasUser {
		sk.user = user
	}
	if matched.HasClientID {
		sk.clientID = clientID
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sensors[sk]
	if s == nil {
		m.inserts++
		if m.inserts%1024 == 0 {
			for k, old := range m.sensors {
				if nowMs-old.lastMs > sensorIdleMs {
					delete(m.sensors, k)
				}
			}
		}
		s = &sensor{rate: NewRate(m.numSamples, m.windowMs)}
		m.sensors[sk] = s
	}
	s.lastMs = nowMs
	s.rate.Record(nowMs, value)
	return s.rate.ThrottleMs(nowMs, quota, m.windowMs)
}

// QuotaUser is the quota user of a principal: its name ("alice" for User:alice).
func QuotaUser(principal string) string {
	_, name, ok := strings.Cut(principal, ":")
	if !ok {
		return principal
	}
	return name
}

// RequestTimePercentage is handler time in request_percentage units: percent of one
// second per second, as Kafka's request quota counts it.
func RequestTimePercentage(d time.Duration) float64 {
	return float64(d.Nanoseconds()) * nanosToPercentage
}

const nanosToPercentage = 100.0 / 1e9

// ConnectionQuotas are the quotas of one request's connection: its principal's quota
// user and its client id against the quota values in force (lookup).
type ConnectionQuotas struct {
	m              *QuotaManager
	lookup         QuotaLookup
	user, clientID string
}

// For returns the quotas of a connection of principal with clientID under the quota
// values lookup finds.
func (m *QuotaManager) For(lookup QuotaLookup, principal, clientID string) ConnectionQuotas {
	return ConnectionQuotas{m: m, lookup: lookup, user: QuotaUser(principal), clientID: clientID}
}

// Record adds value at now to the rate of key under the quota that applies to the
// connection (ResolveQuota's precedence) and returns the throttle time the rate now
// calls for; 0 when no quota applies.
func (c ConnectionQuotas) Record(key string, value float64, now time.Time) time.Duration {
	quota, matched, ok := ResolveQuota(c.lookup, c.user, c.clientID, key)
	if !ok {
		return 0
	}
	return time.Duration(c.m.Record(key, matched, c.user, c.clientID, quota, value, now.UnixMilli())) * time.Millisecond
}
