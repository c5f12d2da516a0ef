package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/petrel-broker/petrel/metadata"
)

// TestTieredStorageConfigs: Kafka's tiered storage properties are known with Kafka's
// defaults; remote.storage.enable=true is accepted only where the broker enables the
// remote storage system and the topic is not compacted (ValidateTopicConfigs), the
// others are accepted within Kafka's validators, and the S3 credentials are secrets.
func TestTieredStorageConfigs(t *testing.T) {
	for name, want := range map[string]string{
		"remote.log.storage.system.enable":             "false",
		"remote.log.manager.task.interval.ms":          "30000",
		"remote.log.manager.copy.max.bytes.per.second": "9223372036854775807",
		"remote.log.reader.threads":                    "10",
		"log.local.retention.ms":                       "-2",
		"log.local.retention.bytes":                    "-2",
		RemoteS3PathStyleProperty:                      "false",
		RemoteS3EndpointURLProperty:                    "",
		RemoteAWSSecretAccessKeyProperty:               "",
	} {
		def, ok := BrokerDef(name)
		if !ok || def.Default != want {
			t.Errorf("broker %s: known %v, default %q, want %q", name, ok, def.Default, want)
		}
	}
	for name, want := range map[string]string{
		"remote.storage.enable": "false", "local.retention.ms": "-2", "local.retention.bytes": "-2",
		"remote.log.copy.disable": "false", "remote.log.delete.on.disable": "false",
	} {
		def, ok := TopicDef(name)
		if !ok || def.Default != want {
			t.Errorf("topic %s: known %v, default %q, want %q", name, ok, def.Default, want)
		}
	}

	if err := ValidateTopicConfig("remote.storage.enable", "true"); err != nil {
		t.Errorf("remote.storage.enable=true alone: %v", err)
	}
	tiered := map[string]string{"remote.storage.enable": "true"}
	enabled := map[string]string{"remote.log.storage.system.enable": "true"}
	if err := ValidateTopicConfigs(tiered, nil); !errors.Is(err, metadata.ErrInvalidConfig) || !strings.Contains(err.Error(), "Tiered Storage functionality is disabled") {
		t.Errorf("remote.storage.enable=true on a broker without remote storage: %v, want Kafka's INVALID_CONFIG", err)
	}
	if err := ValidateTopicConfigs(tiered, enabled); err != nil {
		t.Errorf("remote.storage.enable=true on a broker with remote storage: %v", err)
	}
	compacted := map[string]string{"remote.storage.enable": "true", "cleanup.policy": "compact,delete"}
	if err := ValidateTopicConfigs(compacted, enabled); !errors.Is(err, metadata.ErrInvalidConfig) {
		t.Errorf("remote storage on a compacted topic: %v, want INVALID_CONFIG", err)
	}
	compactByDefault := map[string]string{"remote.log.storage.system.enable": "true", "log.cleanup.policy": "compact"}
	if err := ValidateTopicConfigs(tiered, compactByDefault); !errors.Is(err, metadata.ErrInvalidConfig) {
		t.Errorf("remote storage on a topic compacted by log.cleanup.policy: %v, want INVALID_CONFIG", err)
	}
	deleting := map[string]string{"remote.storage.enable": "true", "cleanup.policy": "delete"}
	if err := ValidateTopicConfigs(deleting, compactByDefault); err != nil {
		t.Errorf("remote storage on a topic overriding log.cleanup.policy=compact with delete: %v", err)
	}
	for name, value := range map[string]string{
		"remote.storage.enable": "FALSE", "local.retention.ms": "-2", "local.retention.bytes": "1048576",
		"remote.log.copy.disable": "true", "remote.log.delete.on.disable": "true",
	} {
		if err := ValidateTopicConfig(name, value); err != nil {
			t.Errorf("%s=%s: %v", name, value, err)
		}
	}
	for _, name := range []string{"local.retention.ms", "local.retention.bytes"} {
		if err := ValidateTopicConfig(name, "-3"); !errors.Is(err, metadata.ErrInvalidConfig) {
			t.Errorf("%s=-3: %v, want INVALID_CONFIG (Kafka's minimum is -2)", name, err)
		}
	}

	def, _ := BrokerDef("remote.log.storage.system.enable")
	if err := CheckValue(def, "true"); err != nil {
		t.Errorf("remote.log.storage.system.enable=true refused: %v", err)
	}
	if w := LimitWarning(def, "true"); w != "" {
		t.Errorf("remote.log.storage.system.enable=true warns %q", w)
	}

	for _, name := range []string{RemoteAWSAccessKeyIDProperty, RemoteAWSSecretAccessKeyProperty} {
		if !Sensitive(name) || Shown(name, "AKIA-secret") != hiddenValue {
			t.Errorf("%s is not a secret", name)
		}
	}
	if Sensitive(RemoteS3BucketProperty) {
		t.Errorf("%s is hidden as a secret", RemoteS3BucketProperty)
	}
}
