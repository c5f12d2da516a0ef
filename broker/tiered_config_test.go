package broker

import "testing"

// TestTieredTopicConfigsReachTheLog: remote.storage.enable and local.retention.* become
// the log's settings, -2 (Kafka's default: use retention.*) by default; a compact-only
// topic is never trimmed locally either.
func TestTieredTopicConfigsReachTheLog(t *testing.T) {
	cfg := Config{Properties: map[string]string{}}
	sc := segmentConfig(cfg.topicConfigs(nil))
	if sc.RemoteStorageEnable || sc.LocalRetentionMs != -2 || sc.LocalRetentionBytes != -2 {
		t.Fatalf("defaults: %+v", sc)
	}
	sc = segmentConfig(cfg.topicConfigs(map[string]string{"remote.storage.enable": "true", "local.retention.ms": "60000", "local.retention.bytes": "1048576"}))
	if !sc.RemoteStorageEnable || sc.LocalRetentionMs != 60000 || sc.LocalRetentionBytes != 1048576 {
		t.Fatalf("overrides: %+v", sc)
	}
	sc = segmentConfig(cfg.topicConfigs(map[string]string{"cleanup.policy": "compact", "local.retention.ms": "60000"}))
	if sc.LocalRetentionMs != -1 || sc.LocalRetentionBytes != -1 {
		t.Fatalf("compacted topic: %+v", sc)
	}
}
