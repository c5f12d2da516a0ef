// Package telemetry is the broker's side of client telemetry (KIP-714): the client
// metrics subscriptions (the CLIENT_METRICS config resource), the client instances
// that ask for them (GetTelemetrySubscriptions) and push metrics (PushTelemetry), and
// the pushed OTLP metrics re-exported as Prometheus series with the client's labels,
// bounded in number and expired with their client. It does no I/O and starts no
// goroutine; the time comes in as an argument or through Config.Now.
package telemetry

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/petrel-broker/petrel/segment"
)

// The configs of a client metrics subscription (Kafka's ClientMetricsConfigs).
const (
	MetricsConfig    = "metrics"
	IntervalMsConfig = "interval.ms"
	MatchConfig      = "match"
)

// Kafka's bounds and default of interval.ms, and the metric list that subscribes to
// every metric.
const (
	DefaultIntervalMs = 300000
	MinIntervalMs     = 100
	MaxIntervalMs     = 3600000
	AllMetrics        = "*"
)

// The client selectors a match pattern may name (Kafka's ClientMetricsConfigs).
const (
	SelectorClientInstanceID      = "client_instance_id"
	SelectorClientID              = "client_id"
	SelectorClientSoftwareName    = "client_software_name"
	SelectorClientSoftwareVersion = "client_software_version"
	SelectorClientSourceAddress   = "client_source_address"
	SelectorClientSourcePort      = "client_source_port"
)

var selectors = []string{SelectorClientInstanceID, SelectorClientID, SelectorClientSoftwareName,
	SelectorClientSoftwareVersion, SelectorClientSourceAddress, SelectorClientSourcePort}

// Subscription is one CLIENT_METRICS resource: the metric name prefixes to ask of the
// clients it matches, how often they push, and the patterns a client must all match
// (none: every client).
type Subscription struct {
	Name       string
	Metrics    []string
	IntervalMs int32
	Match      map[string]*regexp.Regexp
}

// SplitList splits a LIST config value as Kafka does: comma-separated, trimmed, empty
// elements dropped.
func SplitList(v string) []string {
	var out []string
	for _, e := range strings.Split(v, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// ParseSubscription builds subscription name from its configs (those unset take
// Kafka's defaults). The error is Kafka's message for an invalid interval or pattern.
func ParseSubscription(name string, configs map[string]string) (Subscription, error) {
	s := Subscription{Name: name, Metrics: SplitList(configs[MetricsConfig]), IntervalMs: DefaultIntervalMs}
	if v, ok := configs[IntervalMsConfig]; ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil || n < MinIntervalMs || n > MaxIntervalMs {
			return s, fmt.Errorf("Invalid value %s for %s, interval must be between %d and %d (1 hour)", v, IntervalMsConfig, MinIntervalMs, MaxIntervalMs)
		}
		s.IntervalMs = int32(n)
	}
	m, err := ParseMatch(SplitList(configs[MatchConfig]))
	if err != nil {
		return s, err
	}
	s.Match = m
	return s, nil
}

// ParseMatch parses match patterns, each selector=regex with a known selector, the
// regular expression matching a whole value (RE2 syntax, where Kafka takes Java's).
func ParseMatch(patterns []string) (map[string]*regexp.Regexp, error) {
	out := map[string]*regexp.Regexp{}
	for _, p := range patterns {
		key, expr, ok := strings.Cut(p, "=")
		key, expr = strings.TrimSpace(key), strings.TrimSpace(expr)
		if !ok || key == "" || expr == "" {
			return nil, fmt.Errorf("Illegal client matching pattern: %s", p)
		}
		if !slices.Contains(selectors, key) {
			return nil, fmt.Errorf("Invalid client matching pattern: %s, unknown selector %s", p, key)
		}
		re, err := regexp.Compile("^(?:" + expr + ")$")
		if err != nil {
			return nil, fmt.Errorf("Illegal regex pattern in client matching pattern: %s", p)
		}
		out[key] = re
	}
	return out, nil
}

// ClientInfo is what a broker knows of a client instance: the selectors' values and
// the principal it authenticated as.
type ClientInfo struct {
	ClientID        string
	SoftwareName    string
	SoftwareVersion string
	SourceAddress   string
	SourcePort      string
	Principal       string
}

func (c ClientInfo) selector(key, instanceID string) string {
	switch key {
	case SelectorClientInstanceID:
		return instanceID
	case SelectorClientID:
		return c.ClientID
	case SelectorClientSoftwareName:
		return c.SoftwareName
	case SelectorClientSoftwareVersion:
		return c.SoftwareVersion
	case SelectorClientSourceAddress:
		return c.SourceAddress
	case SelectorClientSourcePort:
		return c.SourcePort
	}
	return ""
}

// matches reports whether the client matches every pattern of s.
func (s Subscription) matches(c ClientInfo, instanceID string) bool {
	for key, re := range s.Match {
		if !re.MatchString(c.selector(key, instanceID)) {
			return false
		}
	}
	return true
}

// resolved is what a client instance is asked for: the union of the metrics of the
// subscriptions it matches ("*" alone when one asks for every metric), sorted, and the
// shortest of their intervals (Kafka's default when none matches).
type resolved struct {
	metrics    []string
	intervalMs int32
}

func resolve(subs []Subscription, c ClientInfo, instanceID string) resolved {
	r := resolved{intervalMs: DefaultIntervalMs}
	set := map[string]bool{}
	for _, s := range subs {
		if !s.matches(c, instanceID) {
			continue
		}
		for _, m := range s.Metrics {
			set[m] = true
		}
		r.intervalMs = min(r.intervalMs, s.IntervalMs)
	}
	if set[AllMetrics] {
		r.metrics = []string{AllMetrics}
		return r
	}
	r.metrics = make([]string, 0, len(set))
	for m := range set {
		r.metrics = append(r.metrics, m)
	}
	slices.Sort(r.metrics)
	return r
}

// SubscriptionID is Kafka's subscription id: the CRC32C of the metrics as Java prints a
// set ("[a, b]") followed by the interval, XORed with the instance id's Java hash code.
// Petrel lists the metrics sorted, where Kafka takes its hash set's order: with more
// than one metric the two may differ, which no client can tell (the id is opaque).
func SubscriptionID(metrics []string, intervalMs int32, instanceID [16]byte) int32 {
	text := "[" + strings.Join(metrics, ", ") + "]" + strconv.FormatInt(int64(intervalMs), 10)
	return int32(segment.CRC32C([]byte(text))) ^ uuidHashCode(instanceID)
}

// uuidHashCode is Java's Uuid.hashCode: the two 64-bit halves XORed, then the two
// 32-bit halves of that.
func uuidHashCode(id [16]byte) int32 {
	var hi, lo uint64
	for i := 0; i < 8; i++ {
		hi = hi<<8 | uint64(id[i])
		lo = lo<<8 | uint64(id[8+i])
	}
	h := hi ^ lo
	return int32(h>>32) ^ int32(h)
}
