package broker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/internal/testwait"
)

func checkProps(t *testing.T, strict bool, props map[string]string) ([]string, error) {
	t.Helper()
	c := Config{Properties: props, StrictConfig: strict}
	return c.checkProperties()
}

func TestCheckProperties_Warnings(t *testing.T) {
	tests := []struct {
		name, value string
		want        string // a part of the one warning
	}{
		{"log.retention.hour", "1", "The configuration 'log.retention.hour' was supplied (--set) but isn't a known config; did you mean log.retention.hours?"},
		{"num.partition", "3", "did you mean num.partitions?"},
		{"retention.ms", "1000", "isn't a known config; did you mean log.retention.ms?"},
		{"completely.different.thing", "1", "isn't a known config"},
		{"ssl.cipher.suites", "TLS_AES_128_GCM_SHA256", "Petrel does not implement it yet (this TLS or SASL setting is not implemented"},
		{"listener.name.sasl_plaintext.gssapi.sasl.kerberos.service.name", "kafka", "Petrel does not implement it yet"},
		{"process.roles", "broker,controller", "Petrel does not implement it yet (Petrel's Raft quorum is configured by --voters"},
		{"node.id", "4", "The configuration 'node.id' was supplied (--set) but Petrel takes it from --node-id; the value is ignored"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			warnings, err := checkProps(t, false, map[string]string{tt.name: tt.value})
			if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], tt.want) {
				t.Fatalf("warnings %q, error %v; expected one containing %q", warnings, err, tt.want)
			}
			if tt.name == "completely.different.thing" && strings.Contains(warnings[0], "did you mean") {
				t.Fatalf("a far name got a suggestion: %q", warnings[0])
			}
			_, err = checkProps(t, true, map[string]string{tt.name: tt.value})
			if !errors.Is(err, config.ErrInvalidBrokerConfig) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "--strict-config") {
				t.Fatalf("--strict-config: %v, expected an error containing %q", err, tt.want)
			}
		})
	}
	if w, err := checkProps(t, true, map[string]string{"log.retention.hours": "1", "num.partitions": "3", "compression.type": "zstd",
		"compression.zstd.level": "9", "compression.gzip.level": "1", "log.message.timestamp.type": "LogAppendTime"}); err != nil || len(w) != 0 {
		t.Fatalf("known properties: warnings %q, error %v", w, err)
	}
}

func TestCheckProperties_InvalidValueIsAnError(t *testing.T) {
	_, err := checkProps(t, false, map[string]string{"log.segment.bytes": "-5", "log.retention.hour": "1"})
	if !errors.Is(err, config.ErrInvalidBrokerConfig) || !strings.Contains(err.Error(), "Invalid value -5 for configuration log.segment.bytes: Value must be at least 14") {
		t.Fatalf("error %v", err)
	}
}

func TestStart_RefusesOutOfRangeAndWarnsOnTypos(t *testing.T) {
	cfg := Config{NodeID: 0, DataDir: t.TempDir(), Listen: "127.0.0.1:0", RaftListen: "127.0.0.1:0"}

	bad := cfg
	bad.Properties = map[string]string{"log.segment.bytes": "-5"}
	if b, err := Start(bad); err == nil || err.Error() != "broker: invalid configuration: Invalid value -5 for configuration log.segment.bytes: Value must be at least 14" {
		if b != nil {
			b.Shutdown(context.Background())
		}
		t.Fatalf("Start with log.segment.bytes=-5: %v", err)
	}

	strict := cfg
	strict.Properties, strict.StrictConfig = map[string]string{"log.retention.hour": "1"}, true
	if b, err := Start(strict); err == nil || !strings.Contains(err.Error(), "did you mean log.retention.hours?") {
		if b != nil {
			b.Shutdown(context.Background())
		}
		t.Fatalf("Start --strict-config with a typo: %v", err)
	}

	var logs testwait.Buffer
	typo := cfg
	typo.Properties = map[string]string{"log.retention.hour": "1"}
	typo.Logger = hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})
	b, err := Start(typo)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		b.Shutdown(ctx)
	}()
	if got := logs.String(); !strings.Contains(got, "[WARN]") || !strings.Contains(got, "The configuration 'log.retention.hour' was supplied (--set) but isn't a known config; did you mean log.retention.hours?") {
		t.Fatalf("start log:\n%s", got)
	}
}

// TestCheckProperties_GroupConsumerRules refuses, as Kafka refuses to start, group.*
// properties that break the rules across them, and accepts Kafka's defaults and
// values that keep them.
func TestCheckProperties_GroupConsumerRules(t *testing.T) {
	_, err := checkProps(t, false, map[string]string{"group.consumer.heartbeat.interval.ms": "15000", "group.consumer.session.timeout.ms": "45000",
		"group.consumer.max.heartbeat.interval.ms": "50000", "group.consumer.min.session.timeout.ms": "10000"})
	if err != nil {
		t.Fatalf("valid group.consumer.* properties refused: %v", err)
	}
	_, err = checkProps(t, false, map[string]string{"group.consumer.session.timeout.ms": "90000"})
	if !errors.Is(err, config.ErrInvalidBrokerConfig) || !strings.Contains(err.Error(), "group.consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms") {
		t.Fatalf("session timeout above its max: %v", err)
	}
	_, err = checkProps(t, false, map[string]string{"group.coordinator.rebalance.protocols": "consumer"})
	if !errors.Is(err, config.ErrInvalidBrokerConfig) || !strings.Contains(err.Error(), "Disabling the 'classic' protocol is not supported.") {
		t.Fatalf("classic disabled: %v", err)
	}
	w, err := checkProps(t, false, map[string]string{"group.coordinator.rebalance.protocols": "classic,consumer,streams"})
	if err != nil || len(w) != 1 || !strings.Contains(w[0], "Petrel supports only classic, consumer, share (streams groups are not implemented)") {
		t.Fatalf("streams enabled: warnings %q, error %v", w, err)
	}
	w, err = checkProps(t, true, map[string]string{"group.consumer.assignors": "org.apache.kafka.coordinator.group.assignor.RangeAssignor,uniform",
		"group.consumer.migration.policy": "UPGRADE", "group.coordinator.rebalance.protocols": "classic", "group.consumer.max.size": "10"})
	if err != nil || len(w) != 0 {
		t.Fatalf("Kafka's group.consumer.* values: warnings %q, error %v", w, err)
	}
}
