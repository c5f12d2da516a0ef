package broker

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestQuorumTimeouts: the controller.quorum.* properties reach hashicorp/raft's
// settings, defaults and overrides alike, and every combination the validators accept
// is one raft accepts (an election timeout below the fetch timeout is raised to it).
func TestQuorumTimeouts(t *testing.T) {
	for _, tc := range []struct {
		props                      map[string]string
		heartbeat, election, lease time.Duration
	}{
		{nil, 500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond},
		{map[string]string{"controller.quorum.fetch.timeout.ms": "2000", "controller.quorum.election.timeout.ms": "1000"},
			2 * time.Second, 2 * time.Second, 2 * time.Second},
		{map[string]string{"controller.quorum.fetch.timeout.ms": "200", "controller.quorum.election.timeout.ms": "900"},
			200 * time.Millisecond, 900 * time.Millisecond, 200 * time.Millisecond},
		{map[string]string{"controller.quorum.fetch.timeout.ms": "5", "controller.quorum.election.timeout.ms": "5"},
			5 * time.Millisecond, 5 * time.Millisecond, 5 * time.Millisecond},
	} {
		cfg := Config{NodeID: 1, Properties: tc.props}
		if cfg.Properties == nil {
			cfg.Properties = map[string]string{}
		}
		if _, err := cfg.checkProperties(); err != nil {
			t.Fatalf("%v: %v", tc.props, err)
		}
		rc := raft.DefaultConfig()
		rc.LocalID = "1"
		quorumTimeouts(&cfg, rc)
		if rc.HeartbeatTimeout != tc.heartbeat || rc.ElectionTimeout != tc.election || rc.LeaderLeaseTimeout != tc.lease {
			t.Errorf("%v: heartbeat %s, election %s, lease %s; want %s, %s, %s", tc.props,
				rc.HeartbeatTimeout, rc.ElectionTimeout, rc.LeaderLeaseTimeout, tc.heartbeat, tc.election, tc.lease)
		}
		if err := raft.ValidateConfig(rc); err != nil {
			t.Errorf("%v: raft refuses the mapped settings: %v", tc.props, err)
		}
	}
	cfg := Config{NodeID: 1, Properties: map[string]string{"controller.quorum.fetch.timeout.ms": "4"}}
	if _, err := cfg.checkProperties(); err == nil {
		t.Error("controller.quorum.fetch.timeout.ms=4 was accepted; raft needs at least 5 ms")
	}
	if d := (&Config{Properties: map[string]string{}}).durationMs("controller.quorum.request.timeout.ms"); d != 2*time.Second {
		t.Errorf("controller.quorum.request.timeout.ms defaults to %s", d)
	}
}
