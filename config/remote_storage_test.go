package config

import (
	"errors"
	"testing"

	"github.com/petrel-broker/petrel/metadata"
)

// TestValidateRemoteStorageChange: turning remote.storage.enable off is refused with
// INVALID_CONFIG unless remote.log.delete.on.disable=true comes with it (KIP-950, Kafka
// 3.9); turning it on, keeping it on read-only, or a topic that never had it is fine.
func TestValidateRemoteStorageChange(t *testing.T) {
	on := map[string]string{"remote.storage.enable": "true"}
	for _, tc := range []struct {
		name          string
		before, after map[string]string
		refused       bool
	}{
		{"off without delete", on, map[string]string{"remote.storage.enable": "false"}, true},
		{"unset without delete", on, map[string]string{}, true},
		{"off with delete", on, map[string]string{"remote.storage.enable": "false", "remote.log.delete.on.disable": "true"}, false},
		{"read-only", on, map[string]string{"remote.storage.enable": "true", "remote.log.copy.disable": "true"}, false},
		{"on", nil, on, false},
		{"never on", nil, map[string]string{"retention.ms": "1"}, false},
	} {
		err := ValidateRemoteStorageChange(tc.before, tc.after)
		if tc.refused != errors.Is(err, metadata.ErrInvalidConfig) || !tc.refused && err != nil {
			t.Errorf("%s: %v, refused want %v", tc.name, err, tc.refused)
		}
	}
}
