package config

import (
	"errors"
	"testing"

	"github.com/petrel-broker/petrel/metadata"
)

// TestCheckGroupCoordinatorProperties holds the group.consumer.* broker properties to
// Kafka's GroupCoordinatorConfig rules, in its wording.
func TestCheckGroupCoordinatorProperties(t *testing.T) {
	tests := []struct {
		props map[string]string
		want  string // "" = accepted
	}{
		{nil, ""},
		{map[string]string{"group.consumer.session.timeout.ms": "60000"}, ""},
		{map[string]string{"group.consumer.session.timeout.ms": "60001"}, "group.consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms"},
		{map[string]string{"group.consumer.session.timeout.ms": "44999"}, "group.consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"},
		{map[string]string{"group.consumer.min.session.timeout.ms": "70000", "group.consumer.session.timeout.ms": "70000"}, "group.consumer.max.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"},
		{map[string]string{"group.consumer.heartbeat.interval.ms": "4999"}, "group.consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms"},
		{map[string]string{"group.consumer.heartbeat.interval.ms": "15001"}, "group.consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms"},
		{map[string]string{"group.consumer.min.heartbeat.interval.ms": "20000", "group.consumer.max.heartbeat.interval.ms": "15000"}, "group.consumer.max.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms"},
		{map[string]string{
			"group.consumer.min.session.timeout.ms": "1000", "group.consumer.session.timeout.ms": "1000",
			"group.consumer.heartbeat.interval.ms": "1000", "group.consumer.min.heartbeat.interval.ms": "1000",
		}, "group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms"},
		{map[string]string{
			"group.consumer.min.session.timeout.ms": "1000", "group.consumer.session.timeout.ms": "1001",
			"group.consumer.heartbeat.interval.ms": "1000", "group.consumer.min.heartbeat.interval.ms": "1000",
		}, ""},
		{map[string]string{"group.coordinator.rebalance.protocols": "classic"}, ""},
		{map[string]string{"group.coordinator.rebalance.protocols": "consumer"}, "Disabling the 'classic' protocol is not supported."},
	}
	for _, tt := range tests {
		err := CheckGroupCoordinatorProperties(tt.props)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%v: %v, expected it accepted", tt.props, err)
		case tt.want != "" && (err == nil || err.Error() != tt.want):
			t.Errorf("%v: %v, expected %q", tt.props, err, tt.want)
		case tt.want != "" && !errors.Is(err, metadata.ErrInvalidConfig):
			t.Errorf("%v: %v is not INVALID_CONFIG", tt.props, err)
		}
	}
}

func TestConsumerProtocolEnabled(t *testing.T) {
	for props, want := range map[*map[string]string]bool{
		{}: true,
		{"group.coordinator.rebalance.protocols": "classic"}:                  false,
		{"group.coordinator.rebalance.protocols": " classic , consumer "}:     true,
		{"group.coordinator.rebalance.protocols": "classic,share,streams"}:    false,
		{"group.coordinator.rebalance.protocols": "classic,consumer,streams"}: true,
	} {
		if got := ConsumerProtocolEnabled(*props); got != want {
			t.Errorf("%v: consumer enabled %t, want %t", *props, got, want)
		}
	}
}

func TestConsumerAssignorNames(t *testing.T) {
	tests := []struct {
		value string
		want  []string
	}{
		{"", []string{"uniform", "range"}}, // unset: the default
		{"range", []string{"range"}},
		{"org.apache.kafka.coordinator.group.assignor.RangeAssignor, uniform", []string{"range", "uniform"}},
	}
	for _, tt := range tests {
		props := map[string]string{}
		if tt.value != "" {
			props["group.consumer.assignors"] = tt.value
		}
		got := ConsumerAssignorNames(props)
		if len(got) != len(tt.want) {
			t.Fatalf("%q: %v, want %v", tt.value, got, tt.want)
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%q: %v, want %v", tt.value, got, tt.want)
			}
		}
	}
}

// TestValidateGroupConfigs holds a group's configs to the broker's bounds, with unset
// configs taking the broker's values, in Kafka's GroupConfig.validate wording.
func TestValidateGroupConfigs(t *testing.T) {
	wide := map[string]string{
		"group.consumer.min.session.timeout.ms": "10000", "group.consumer.max.session.timeout.ms": "90000",
		"group.consumer.min.heartbeat.interval.ms": "1000", "group.consumer.max.heartbeat.interval.ms": "20000",
	}
	tests := []struct {
		configs, props map[string]string
		want           string
	}{
		{map[string]string{}, nil, ""},
		{map[string]string{"consumer.session.timeout.ms": "60000"}, nil, ""},
		{map[string]string{"consumer.session.timeout.ms": "60001"}, nil, "consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms"},
		{map[string]string{"consumer.session.timeout.ms": "44999"}, nil, "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"},
		{map[string]string{"consumer.heartbeat.interval.ms": "15000"}, nil, ""},
		{map[string]string{"consumer.heartbeat.interval.ms": "15001"}, nil, "consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms"},
		{map[string]string{"consumer.heartbeat.interval.ms": "4999"}, nil, "consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms"},
		{map[string]string{"consumer.session.timeout.ms": "10000"}, wide, ""},
		{map[string]string{"consumer.session.timeout.ms": "10000", "consumer.heartbeat.interval.ms": "10000"}, wide, "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"},
		// The unset heartbeat interval is the broker's (here 12000), not Kafka's default.
		{map[string]string{"consumer.session.timeout.ms": "11000"}, merge(wide, map[string]string{"group.consumer.heartbeat.interval.ms": "12000"}), "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"},
	}
	for _, tt := range tests {
		err := ValidateGroupConfigs(tt.configs, tt.props)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%v with %v: %v, expected it accepted", tt.configs, tt.props, err)
		case tt.want != "" && (err == nil || err.Error() != tt.want):
			t.Errorf("%v with %v: %v, expected %q", tt.configs, tt.props, err, tt.want)
		case tt.want != "" && !errors.Is(err, metadata.ErrInvalidConfig):
			t.Errorf("%v: %v is not INVALID_CONFIG", tt.configs, err)
		}
	}
}

func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func TestValidateGroupConfig(t *testing.T) {
	tests := []struct{ name, value, want string }{
		{"consumer.session.timeout.ms", "50000", ""},
		{"consumer.session.timeout.ms", "0", "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at least 1"},
		{"consumer.heartbeat.interval.ms", "soon", "Invalid value soon for configuration consumer.heartbeat.interval.ms: Not a number of type INT"},
		{"streams.session.timeout.ms", "50000", "Unknown group config name: streams.session.timeout.ms"},
		{"retention.ms", "1", "Unknown group config name: retention.ms"},
	}
	for _, tt := range tests {
		err := ValidateGroupConfig(tt.name, tt.value)
		if got := errText(err); got != tt.want {
			t.Errorf("%s=%s: %q, want %q", tt.name, tt.value, got, tt.want)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestResolveGroupConfigs reports each group config's value and Kafka source: the
// group's own (GROUP_CONFIG), the supplied broker property (STATIC_BROKER_CONFIG), the
// default (DEFAULT_CONFIG).
func TestResolveGroupConfigs(t *testing.T) {
	got := ResolveGroupConfigs(
		map[string]string{"consumer.session.timeout.ms": "50000"},
		map[string]string{"group.consumer.heartbeat.interval.ms": "6000"})
	if r := got["consumer.session.timeout.ms"]; r.Value != "50000" || r.Source != GroupConfigSource {
		t.Errorf("session timeout %+v, want 50000 from GROUP_CONFIG", r)
	}
	if r := got["consumer.heartbeat.interval.ms"]; r.Value != "6000" || r.Source != StaticBrokerConfig {
		t.Errorf("heartbeat interval %+v, want 6000 from STATIC_BROKER_CONFIG", r)
	}
	got = ResolveGroupConfigs(nil, nil)
	if r := got["consumer.heartbeat.interval.ms"]; r.Value != "5000" || r.Source != DefaultConfig {
		t.Errorf("heartbeat interval %+v, want 5000 from DEFAULT_CONFIG", r)
	}
}
