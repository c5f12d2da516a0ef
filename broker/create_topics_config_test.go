package broker

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestCreateTopics_InvalidConfigsGetKafkasMessage: a topic config outside its validator,
// outside what Petrel implements, or unknown is INVALID_CONFIG with Kafka's message, and
// creates nothing.
func TestCreateTopics_InvalidConfigsGetKafkasMessage(t *testing.T) {
	b := startTestBroker(t, "", nil)
	adm := newAdmin(t, b)
	ctx := testContext(t)
	tests := []struct{ name, value, want string }{
		{"segment.bytes", "-5", "Invalid value -5 for configuration segment.bytes: Value must be at least 14"},
		{"segment.bytes", "abc", "Invalid value abc for configuration segment.bytes: Not a number of type INT"},
		{"retention.ms", "-2", "Invalid value -2 for configuration retention.ms: Value must be at least -1"},
		{"min.insync.replicas", "0", "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"},
		{"compression.type", "brotli", "Invalid value brotli for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"},
		{"cleanup.policy", "compact,bogus", "Invalid value bogus for configuration cleanup.policy: String must be one of: compact, delete"},
		{"compression.gzip.level", "10", "Invalid value 10 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"},
		{"compression.lz4.level", "9", "Petrel does not implement topic config compression.lz4.level yet (lz4 recompression uses pierrec/lz4's fast compressor (Kafka's default, 9); its levels do not map onto lz4-java's 1-17)"},
		{"no.such.config", "1", "Unknown topic config name: no.such.config"},
		{"preallocate", "true", "Petrel does not implement topic config preallocate yet (segment files grow as written)"},
	}
	for _, tt := range tests {
		for _, validateOnly := range []bool{false, true} {
			configs := map[string]*string{tt.name: strp(tt.value)}
			var resp kadm.CreateTopicResponse
			var err error
			if validateOnly {
				var all kadm.CreateTopicResponses
				all, err = adm.ValidateCreateTopics(ctx, 1, 1, configs, "bad-config")
				resp = all["bad-config"]
			} else {
				resp, err = adm.CreateTopic(ctx, 1, 1, configs, "bad-config")
			}
			if err != nil && resp.Err == nil {
				t.Fatal(err)
			}
			if !errors.Is(resp.Err, kerr.InvalidConfig) || resp.ErrMessage != tt.want {
				t.Errorf("%s=%s (validate only %v): %v %q, expected INVALID_CONFIG %q", tt.name, tt.value, validateOnly, resp.Err, resp.ErrMessage, tt.want)
			}
		}
	}
	// Just inside the range is accepted.
	resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": strp("14"), "compression.type": strp("zstd")}, "edge")
	if err != nil || resp.Err != nil {
		t.Fatalf("segment.bytes=14: %v %v %q", err, resp.Err, resp.ErrMessage)
	}
	topics, err := adm.ListTopics(ctx)
	if err != nil || topics.Has("bad-config") || !topics.Has("edge") {
		t.Fatalf("topics after the refusals: %v %v", err, topics.Names())
	}
}
