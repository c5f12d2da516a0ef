package broker

import (
	"testing"

	"github.com/petrel-broker/petrel/config"
)

func TestThrottledReplicaListValidator(t *testing.T) {
	for _, ok := range []string{"", "*", "0:1", "0:1, 1:2,12:0"} {
		if err := config.ValidateTopicConfig("leader.replication.throttled.replicas", ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"x", "0", "0:", ":1", "*,0:1", "-1:0", "0:a"} {
		if err := config.ValidateTopicConfig("follower.replication.throttled.replicas", bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
