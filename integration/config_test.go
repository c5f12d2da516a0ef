package integration

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestCluster_CreateTopicsInvalidConfigForwarded: a topic config outside its validator,
// sent to a broker that is not the controller, comes back (forwarded) as INVALID_CONFIG
// with Kafka's message, and no topic is created; a value just inside is accepted.
func TestCluster_CreateTopicsInvalidConfigForwarded(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3)
	other := (c.Controller() + 1) % 3
	r := c.createTopicVia(t, other, "bad-segment", 1, 3, map[string]string{"segment.bytes": "-5"})
	const want = "Invalid value -5 for configuration segment.bytes: Value must be at least 14"
	if r.ErrorCode != kerr.InvalidConfig.Code || deref(r.ErrorMessage) != want {
		t.Fatalf("CreateTopics segment.bytes=-5 via node-%d: %v %q, expected INVALID_CONFIG %q", other, kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage), want)
	}
	c.mustCreateTopicVia(t, other, "edge-segment", 1, 3, map[string]string{"segment.bytes": "14"})
	im := c.WaitConverged()
	if _, ok := im.Topics["bad-segment"]; ok {
		t.Fatal("the refused topic exists")
	}
	if got := im.topicConfigs("edge-segment")["segment.bytes"]; got != "14" {
		t.Fatalf("edge-segment segment.bytes = %q", got)
	}
}
