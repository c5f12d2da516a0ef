package broker

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// hashicorp/raft's errors naming a removed member, as a server or as an address, go to
// Debug; every other error, and a member added back, is logged at the default level.
func TestRemovedPeerLoggerDemotesRemovedMembers(t *testing.T) {
	var out bytes.Buffer
	removed := newRemovedPeers()
	filter := newRaftLogFilter(nil, time.Now)
	filter.removed = removed
	l := newRaftLogger(hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Info}), filter)
	gone := raft.Server{ID: "3", Address: "127.0.0.1:9393"}
	removed.add(gone.Address)
	l.Error("failed to heartbeat to", "peer", gone.Address, "error", "connection refused")
	l.Error("failed to appendEntries to", "peer", gone, "error", "connection refused")
	if out.Len() != 0 {
		t.Fatalf("errors about a removed member logged at the default level: %s", out.String())
	}
	l.Error("failed to heartbeat to", "peer", raft.ServerAddress("127.0.0.1:9193"), "error", "connection refused")
	removed.readded(gone.Address)
	l.Error("failed to appendEntries to", "peer", gone, "error", "connection refused")
	// Those two are failures to reach a peer (raft_logger.go: the first at INFO).
	if got := strings.Count(out.String(), "failed to"); got != 2 {
		t.Fatalf("%d failures logged, want 2 (a member never removed, and one added back):\n%s", got, out.String())
	}
}
