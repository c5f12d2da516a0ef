package auth

import (
	"fmt"
	"math"
)

// Quota keys and entity types, Kafka's names.
const (
	ProducerByteRate  = "producer_byte_rate"
	ConsumerByteRate  = "consumer_byte_rate"
	RequestPercentage = "request_percentage"

	EntityUser     = "user"
	EntityClientID = "client-id"
)

// QuotaEntity names a quota holder: a user and/or a client id. A nil name (with the
// part present) is that type's default entity.
type QuotaEntity struct {
	HasUser, HasClientID bool
	User, ClientID       *string
}

// QuotaLookup returns the value stored for an entity and key.
type QuotaLookup func(e QuotaEntity, key string) (float64, bool)

// ResolveQuota finds the quota that applies to a connection of user (the principal's
// name) and clientID, in Kafka's order of precedence:
// user+client-id, user+default client, user, default user+client-id, default
// user+default client, default user, client-id, default client. It returns the
// matched entity too, whose named parts key the connection's rate (Kafka's metric
// tags): connections sharing them share a rate.
func ResolveQuota(lookup QuotaLookup, user, clientID, key string) (float64, QuotaEntity, bool) {
	u, c := &user, &clientID
	candidates := []QuotaEntity{
		{HasUser: true, User: u, HasClientID: true, ClientID: c},
		{HasUser: true, User: u, HasClientID: true},
		{HasUser: true, User: u},
		{HasUser: true, HasClientID: true, ClientID: c},
		{HasUser: true, HasClientID: true},
		{HasUser: true},
		{HasClientID: true, ClientID: c},
		{HasClientID: true},
	}
	for _, e := range candidates {
		if v, ok := lookup(e, key); ok {
			return v, e, true
		}
	}
	return 0, QuotaEntity{}, false
}

// ValidateQuota checks a quota key and value as AlterClientQuotas does: a known key,
// a positive finite value (request_percentage too).
func ValidateQuota(key string, value float64) error {
	switch key {
	case ProducerByteRate, ConsumerByteRate, RequestPercentage:
	default:
		return fmt.Errorf("%w: unknown quota key %q", ErrInvalidQuota, key)
	}
	if math.IsNaN(value) || math.IsInf(value, 0) || value <= 0 {
		return fmt.Errorf("%w: %s must be a positive number, not %v", ErrInvalidQuota, key, value)
	}
	return nil
}

// Rate is Kafka's sampled rate (SampledStat with Rate's window): values are recorded
// into numSamples samples of windowMs each, and the rate is their total over the time
// they span, counted as at least numSamples-1 full windows, per second. Not safe for
// concurrent use.
type Rate struct {
	windowMs int64
	samples  []sample
	cur      int
}

type sample struct {
	startMs int64
	value   float64
	used    bool
}

// NewRate returns a rate over numSamples windows of windowMs (quota.window.num,
// quota.window.size.seconds).
func NewRate(numSamples int, windowMs int64) *Rate {
	return &Rate{windowMs: max(windowMs, 1), samples: make([]sample, max(numSamples, 1))}
}

// Record adds v at nowMs.
func (r *Rate) Record(nowMs int64, v float64) {
	s := &r.samples[r.cur]
	if !s.used || nowMs >= s.startMs+r.windowMs {
		r.cur = (r.cur + 1) % len(r.samples)
		r.samples[r.cur] = sample{startMs: nowMs, used: true}
	}
	r.samples[r.cur].value += v
}

// Measure returns the rate per second at nowMs and the window length in
// milliseconds it was measured over.
func (r *Rate) Measure(nowMs int64) (float64, int64) {
	n := int64(len(r.samples))
	total, oldest := 0.0, nowMs
	for i := range r.samples {
		s := &r.samples[i]
		if !s.used {
			continue
		}
		if s.startMs+n*r.windowMs <= nowMs { // obsolete
			*s = sample{}
			continue
		}
		total += s.value
		oldest = min(oldest, s.startMs)
	}
	elapsed := nowMs - oldest
	if full := elapsed / r.windowMs; full < n-1 {
		elapsed += (n - 1 - full) * r.windowMs
	}
	elapsed = max(elapsed, 1)
	return total * 1000 / float64(elapsed), elapsed
}

// ThrottleMs is Kafka's throttle time for a rate over its quota at nowMs: the time
// the rate takes to fall back to the quota, (rate - quota) / quota * window, at most
// maxMs; 0 within the quota.
func (r *Rate) ThrottleMs(nowMs int64, quota float64, maxMs int64) int64 {
	rate, window := r.Measure(nowMs)
	if quota <= 0 || rate <= quota {
		return 0
	}
	t := int64((rate - quota) / quota * float64(window))
	return min(t, maxMs)
}
