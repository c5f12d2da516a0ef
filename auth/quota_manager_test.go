package auth

import (
	"testing"
	"time"
)

func TestQuotaUser(t *testing.T) {
	for principal, want := range map[string]string{"User:alice": "alice", "User:": "", "alice": "alice", "User:a:b": "a:b"} {
		if got := QuotaUser(principal); got != want {
			t.Errorf("QuotaUser(%q) = %q, want %q", principal, got, want)
		}
	}
}

func TestRequestTimePercentage(t *testing.T) {
	if got := RequestTimePercentage(time.Second); got != 100 {
		t.Errorf("one second: %v%%, want 100", got)
	}
	if got := RequestTimePercentage(10 * time.Millisecond); got != 1 {
		t.Errorf("10ms: %v%%, want 1", got)
	}
}

// TestConnectionQuotas_Record: the quota of the connection's user (by its principal's
// name) and client id applies in Kafka's precedence; a rate over it is throttled, at
// most one window; connections matched by the same entity share a rate; no quota, no
// throttle.
func TestConnectionQuotas_Record(t *testing.T) {
	// alice has producer_byte_rate 1000; every other user the default, 1_000_000.
	lookup := func(e QuotaEntity, key string) (float64, bool) {
		if key != ProducerByteRate || !e.HasUser || e.HasClientID {
			return 0, false
		}
		if e.User == nil {
			return 1_000_000, true
		}
		if *e.User == "alice" {
			return 1000, true
		}
		return 0, false
	}
	m := NewQuotaManager(2, 1000)
	now := time.UnixMilli(1_000_000)
	alice := m.For(lookup, "User:alice", "app")
	if d := alice.Record(ProducerByteRate, 500, now); d != 0 {
		t.Errorf("within the quota: throttled %v", d)
	}
	// 3000 bytes over the minimum one window: 3000/s against 1000/s, capped at a window.
	if d := alice.Record(ProducerByteRate, 2500, now); d != time.Second {
		t.Errorf("over the quota: throttled %v, want 1s", d)
	}
	// Another connection of alice (another client id) shares the user's rate.
	if d := m.For(lookup, "User:alice", "other").Record(ProducerByteRate, 1, now); d != time.Second {
		t.Errorf("alice's other client: throttled %v, want 1s", d)
	}
	if d := m.For(lookup, "User:bob", "app").Record(ProducerByteRate, 3000, now); d != 0 {
		t.Errorf("bob under the default quota: throttled %v", d)
	}
	if d := alice.Record(ConsumerByteRate, 1e9, now); d != 0 {
		t.Errorf("no consumer quota: throttled %v", d)
	}
}
