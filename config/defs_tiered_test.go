package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/petrel-broker/petrel/metadata"
)

// TestTieredStorageConfigs: Kafka's tiered storage properties are known with Kafka's
// defaults; remote.storage.enable=true is refused until tiered storage is built, the
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

	err := ValidateTopicConfig("remote.storage.enable", "true")
	if !errors.Is(err, metadata.ErrInvalidConfig) || !strings.Contains(err.Error(), "P23") {
		t.Errorf("remote.storage.enable=true: %v, want INVALID_CONFIG naming P23", err)
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
	if w := LimitWarning(def, "true"); !strings.Contains(w, "P23") {
		t.Errorf("remote.log.storage.system.enable=true warns %q, want a warning naming P23", w)
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
