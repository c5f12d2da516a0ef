package config

import (
	"testing"
	"time"
)

// The share.* group configs are known, typed and validated with Kafka's wording.
func TestValidateShareGroupConfig(t *testing.T) {
	tests := []struct{ name, value, want string }{
		{"share.session.timeout.ms", "50000", ""},
		{"share.heartbeat.interval.ms", "0", "Invalid value 0 for configuration share.heartbeat.interval.ms: Value must be at least 1"},
		{"share.record.lock.duration.ms", "999", "Invalid value 999 for configuration share.record.lock.duration.ms: Value must be at least 1000"},
		{"share.delivery.count.limit", "1", "Invalid value 1 for configuration share.delivery.count.limit: Value must be at least 2"},
		{"share.partition.max.record.locks", "99", "Invalid value 99 for configuration share.partition.max.record.locks: Value must be at least 100"},
		{"share.auto.offset.reset", "earliest", ""},
		{"share.auto.offset.reset", "LATEST", ""},
		{"share.auto.offset.reset", "by_duration:PT1H30M", ""},
		{"share.auto.offset.reset", "by_duration:P1DT0.5S", ""},
		{"share.auto.offset.reset", "hello", "Invalid value hello for configuration share.auto.offset.reset: the value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'."},
		{"share.auto.offset.reset", "by_duration:-PT1H", "Invalid value by_duration:-PT1H for configuration share.auto.offset.reset: Duration '-PT1H' must not be negative."},
		{"share.auto.offset.reset", "by_duration:PT", "Invalid value by_duration:PT for configuration share.auto.offset.reset: Unable to parse 'PT' as an ISO-8601 duration."},
		{"share.isolation.level", "read_committed", ""},
		{"share.isolation.level", "READ_COMMITTED", "Invalid value READ_COMMITTED for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted"},
		{"share.acquire.mode", "record_limit", "Unknown group config name: share.acquire.mode"}, // a consumer config in Kafka 4.2
	}
	for _, tt := range tests {
		if got := errText(ValidateGroupConfig(tt.name, tt.value)); got != tt.want {
			t.Errorf("%s=%s: %q, want %q", tt.name, tt.value, got, tt.want)
		}
	}
}

// A group's share configs lie within the broker's group.share.* bounds, the session
// timeout above the heartbeat interval (Kafka's GroupConfig.validateValues).
func TestValidateShareGroupConfigs(t *testing.T) {
	tests := []struct {
		configs, props map[string]string
		want           string
	}{
		{map[string]string{"share.session.timeout.ms": "60000", "share.record.lock.duration.ms": "15000"}, nil, ""},
		{map[string]string{"share.session.timeout.ms": "44999"}, nil, "share.session.timeout.ms must be greater than or equal to group.share.min.session.timeout.ms"},
		{map[string]string{"share.heartbeat.interval.ms": "15001"}, nil, "share.heartbeat.interval.ms must be less than or equal to group.share.max.heartbeat.interval.ms"},
		{map[string]string{"share.record.lock.duration.ms": "60001"}, nil, "share.record.lock.duration.ms must be less than or equal to group.share.max.record.lock.duration.ms"},
		{map[string]string{"share.record.lock.duration.ms": "14999"}, nil, "share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms"},
		{map[string]string{"share.delivery.count.limit": "11"}, nil, "share.delivery.count.limit must be less than or equal to group.share.max.delivery.count.limit"},
		{map[string]string{"share.delivery.count.limit": "3"}, map[string]string{"group.share.min.delivery.count.limit": "4"}, "share.delivery.count.limit must be greater than or equal to group.share.min.delivery.count.limit"},
		{map[string]string{"share.partition.max.record.locks": "4001"}, nil, "share.partition.max.record.locks must be less than or equal to group.share.max.partition.max.record.locks"},
		{map[string]string{"share.session.timeout.ms": "50000", "share.heartbeat.interval.ms": "50000"},
			map[string]string{"group.share.max.heartbeat.interval.ms": "60000"}, "share.session.timeout.ms must be greater than share.heartbeat.interval.ms"},
	}
	for _, tt := range tests {
		if got := errText(ValidateGroupConfigs(tt.configs, tt.props)); got != tt.want {
			t.Errorf("%v with %v: %q, want %q", tt.configs, tt.props, got, tt.want)
		}
	}
}

// The group.share.* properties are checked across each other at start.
func TestCheckShareGroupProperties(t *testing.T) {
	tests := []struct {
		props map[string]string
		want  string
	}{
		{nil, ""},
		{map[string]string{"group.share.record.lock.duration.ms": "10000"}, "group.share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms"},
		{map[string]string{"group.share.max.delivery.count.limit": "3", "group.share.min.delivery.count.limit": "4"}, "group.share.max.delivery.count.limit must be greater than or equal to group.share.min.delivery.count.limit"},
		{map[string]string{"group.share.session.timeout.ms": "50000", "group.share.heartbeat.interval.ms": "50000", "group.share.max.heartbeat.interval.ms": "60000"},
			"group.share.heartbeat.interval.ms must be less than group.share.session.timeout.ms"},
	}
	for _, tt := range tests {
		if got := errText(CheckShareGroupProperties(tt.props)); got != tt.want {
			t.Errorf("%v: %q, want %q", tt.props, got, tt.want)
		}
	}
	def, ok := BrokerDef("group.share.delivery.count.limit")
	if !ok {
		t.Fatal("group.share.delivery.count.limit is not a broker property")
	}
	if err := CheckValue(def, "11"); errText(err) != "Invalid value 11 for configuration group.share.delivery.count.limit: Value must be no more than 10" {
		t.Errorf("group.share.delivery.count.limit=11: %v", err)
	}
}

func TestParseShareAutoOffsetReset(t *testing.T) {
	tests := []struct {
		in       string
		strategy string
		d        time.Duration
	}{
		{"latest", "latest", 0},
		{" Earliest ", "earliest", 0},
		{"by_duration:P2D", "by_duration", 48 * time.Hour},
		{"BY_DURATION:pt1h2m3.5s", "by_duration", time.Hour + 2*time.Minute + 3500*time.Millisecond},
	}
	for _, tt := range tests {
		s, d, err := ParseShareAutoOffsetReset(tt.in)
		if err != nil || s != tt.strategy || d != tt.d {
			t.Errorf("%q: %q %v %v, want %q %v", tt.in, s, d, err, tt.strategy, tt.d)
		}
	}
}
