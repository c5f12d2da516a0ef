package broker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/petrel-broker/petrel/controller"
)

// raftLogRecorder is a raftLogger over a JSON hclog writing to a buffer, with a clock
// the test moves.
type raftLogRecorder struct {
	t      *testing.T
	buf    bytes.Buffer
	clock  time.Time
	filter *raftLogFilter
	log    hclog.Logger
}

func newRaftLogRecorder(t *testing.T) *raftLogRecorder {
	r := &raftLogRecorder{t: t, clock: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	r.filter = newRaftLogFilter(nil, func() time.Time { return r.clock })
	r.log = newRaftLogger(hclog.New(&hclog.LoggerOptions{Output: &r.buf, Level: hclog.Trace, JSONFormat: true}), r.filter)
	return r
}

// line is one logged line.
type line struct {
	Level   string `json:"@level"`
	Message string `json:"@message"`
	fields  map[string]any
}

// take returns the lines logged since the last call.
func (r *raftLogRecorder) take() []line {
	r.t.Helper()
	var out []line
	for _, s := range strings.Split(strings.TrimSpace(r.buf.String()), "\n") {
		if s == "" {
			continue
		}
		var l line
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			r.t.Fatalf("%q: %v", s, err)
		}
		json.Unmarshal([]byte(s), &l.fields)
		out = append(out, l)
	}
	r.buf.Reset()
	return out
}

// one returns the single line logged since the last call.
func (r *raftLogRecorder) one() line {
	r.t.Helper()
	lines := r.take()
	if len(lines) != 1 {
		r.t.Fatalf("%d lines logged, want 1: %+v", len(lines), lines)
	}
	return lines[0]
}

// codecError stands for the msgpack codec's errors, which have Cause but no Unwrap.
type codecError struct{ err error }

func (e codecError) Error() string { return "msgpack decode error [pos 8670]: " + e.err.Error() }
func (e codecError) Cause() error  { return e.err }

// TestRaftLogger_Levels checks the level each of raft's routine messages is logged at,
// and that other messages keep theirs.
func TestRaftLogger_Levels(t *testing.T) {
	closedRead := &net.OpError{Op: "read", Net: "tcp", Err: net.ErrClosed}
	for _, tc := range []struct {
		name  string
		level hclog.Level
		msg   string
		args  []any
		want  string
	}{
		{"election at bootstrap", hclog.Warn, "heartbeat timeout reached, starting election", []any{"last-leader-addr", ""}, "info"},
		{"election restarted", hclog.Warn, "Election timeout reached, restarting election", nil, "info"},
		{"deposed leader", hclog.Error, "peer has newer term, stopping replication", []any{"peer", raft.Server{ID: "1", Address: "a:1"}}, "info"},
		{"catch-up, follower side", hclog.Warn, "failed to get previous log", []any{"previous-index", 4, "last-index", 0, "error", raft.ErrLogNotFound}, "debug"},
		{"unreadable log", hclog.Warn, "failed to get previous log", []any{"previous-index", 4, "error", errors.New("bolt: read failed")}, "warn"},
		{"catch-up, leader side", hclog.Warn, "appendEntries rejected, sending older logs", []any{"peer", raft.Server{ID: "1", Address: "a:1"}, "next", 3}, "debug"},
		{"closed under the reader", hclog.Error, "failed to decode incoming command", []any{"error", closedRead}, "debug"},
		{"closed, msgpack-wrapped", hclog.Error, "failed to decode incoming command", []any{"error", codecError{closedRead}}, "debug"},
		{"transport shut down", hclog.Error, "failed to decode incoming command", []any{"error", raft.ErrTransportShutdown}, "debug"},
		{"reset by the peer", hclog.Error, "failed to flush response", []any{"error", fmt.Errorf("write: %w", syscall.ECONNRESET)}, "debug"},
		{"garbage on the wire", hclog.Error, "failed to decode incoming command", []any{"error", codecError{errors.New("invalid container type")}}, "error"},
		{"unknown message", hclog.Error, "failed to commit logs", []any{"error", io.ErrShortWrite}, "error"},
		{"unknown warning", hclog.Warn, "failed to contact quorum of nodes, stepping down", nil, "warn"},
		{"info untouched", hclog.Info, "entering follower state", nil, "info"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRaftLogRecorder(t)
			r.log.Log(tc.level, tc.msg, tc.args...)
			if got := r.one(); got.Level != tc.want || got.Message != tc.msg {
				t.Errorf("logged %s %q, want %s %q", got.Level, got.Message, tc.want, tc.msg)
			}
		})
	}
}

// TestRaftLogger_PeerEpisode follows one unreachable peer: the first failure at INFO,
// retries at DEBUG, WARN once it lasted raftPeerWarnAfter and then once per
// raftPeerWarnEvery, and INFO when heartbeats resume; the next failure opens a new
// episode.
func TestRaftLogger_PeerEpisode(t *testing.T) {
	r := newRaftLogRecorder(t)
	peer := raft.Server{Suffrage: raft.Voter, ID: "2", Address: "127.0.0.1:9093"}
	refused := errors.New("dial tcp 127.0.0.1:9093: connect: connection refused")
	fail := func(after time.Duration) {
		r.clock = r.clock.Add(after)
		r.log.Error("failed to appendEntries to", "peer", peer, "error", refused)
	}
	heartbeat := func(after time.Duration) {
		r.clock = r.clock.Add(after)
		r.log.Error("failed to heartbeat to", "peer", peer.Address, "backoff time", time.Second, "error", refused)
	}
	levels := func() string {
		var out []string
		for _, l := range r.take() {
			out = append(out, l.Level)
		}
		return strings.Join(out, ",")
	}

	fail(0)
	if l := r.one(); l.Level != "info" || l.fields["retrying"] != true {
		t.Fatalf("first failure: %+v, want info with retrying=true", l)
	}
	// Retries within the bound, by both messages that name the peer, and the lease check
	// by id only: DEBUG.
	for range 10 {
		heartbeat(time.Second)
		fail(500 * time.Millisecond)
	}
	r.clock = r.clock.Add(time.Second)
	r.log.Warn("failed to contact", "server-id", peer.ID, "time", 2*time.Second)
	if got := levels(); got != strings.TrimSuffix(strings.Repeat("debug,", 21), ",") {
		t.Fatalf("retries within %s logged %s, want debug only", raftPeerWarnAfter, got)
	}
	for range 13 {
		heartbeat(time.Second)
	}
	if got := levels(); got != strings.TrimSuffix(strings.Repeat("debug,", 13), ",") {
		t.Fatalf("retries within %s logged %s, want debug only", raftPeerWarnAfter, got)
	}
	// Past the bound: one WARN with how long (in nanoseconds in JSON) and how many,
	// then DEBUG for a minute.
	heartbeat(time.Second)
	l := r.one()
	if l.Level != "warn" || l.fields["unreachable_for"] != float64(30*time.Second) || l.fields["failures"] != float64(36) {
		t.Fatalf("failure after %s: %+v, want warn with unreachable_for=30s failures=36", raftPeerWarnAfter, l)
	}
	for range 59 {
		heartbeat(time.Second)
	}
	if got := levels(); strings.Contains(got, "warn") || strings.Contains(got, "info") {
		t.Fatalf("retries within %s of the warning logged %s, want debug only", raftPeerWarnEvery, got)
	}
	heartbeat(time.Second)
	if l := r.one(); l.Level != "warn" || l.fields["unreachable_for"] != float64(90*time.Second) {
		t.Fatalf("a minute after the warning: %+v, want warn with unreachable_for=1m30s", l)
	}
	// Heartbeats resume.
	r.clock = r.clock.Add(time.Second)
	args, ok := r.filter.reachable(peer.ID)
	if !ok || args[1] != string(peer.Address) {
		t.Fatalf("reachable: %v %v, want the episode of %s", args, ok, peer.Address)
	}
	if _, again := r.filter.reachable(peer.ID); again {
		t.Fatal("reachable twice for one episode")
	}
	// A new failure is a new episode.
	fail(time.Second)
	if l := r.one(); l.Level != "info" {
		t.Fatalf("failure after recovery: %+v, want info", l)
	}
}

// TestRaftLogger_QuietEndsEpisode checks that failures further apart than the forget
// interval (a restart followed, much later, by another) each open a new episode and
// never reach WARN, and that each peer has its own episode.
func TestRaftLogger_QuietEndsEpisode(t *testing.T) {
	r := newRaftLogRecorder(t)
	a := raft.Server{ID: "1", Address: "a:1"}
	b := raft.Server{ID: "2", Address: "b:1"}
	for i := range 5 {
		r.clock = r.clock.Add(r.filter.forgetAfter + time.Second)
		r.log.Error("failed to make requestVote RPC", "target", a, "error", io.EOF, "term", i)
		r.log.Error("failed to make requestVote RPC", "target", b, "error", io.EOF, "term", i)
		for _, l := range r.take() {
			if l.Level != "info" {
				t.Fatalf("round %d: %+v, want info", i, l)
			}
		}
	}
}

// TestRaftLogger_DerivedLoggersShareFilter checks that the loggers raft derives with
// Named and With still filter, and share the episodes.
func TestRaftLogger_DerivedLoggersShareFilter(t *testing.T) {
	r := newRaftLogRecorder(t)
	transport := r.log.Named("transport")
	transport.Error("failed to decode incoming command", "error", raft.ErrTransportShutdown)
	if l := r.one(); l.Level != "debug" {
		t.Fatalf("Named logger: %+v, want debug", l)
	}
	peer := raft.Server{ID: "3", Address: "c:1"}
	r.log.With("snapshot", "x").Error("failed to appendEntries to", "peer", peer, "error", io.EOF)
	r.log.ResetNamed("raft").Error("failed to appendEntries to", "peer", peer, "error", io.EOF)
	if got := r.take(); len(got) != 2 || got[0].Level != "info" || got[1].Level != "debug" {
		t.Fatalf("With then ResetNamed: %+v, want info then debug (one episode)", got)
	}
}

// TestRaftLogger_QuorumLostWhileStopping: a lost quorum is WARN on a running node and
// INFO once the node is stopping (the whole cluster stopped at once).
func TestRaftLogger_QuorumLostWhileStopping(t *testing.T) {
	r := newRaftLogRecorder(t)
	const msg = "failed to contact quorum of nodes, stepping down"
	r.log.Warn(msg)
	if l := r.one(); l.Level != "warn" {
		t.Fatalf("running: %+v, want warn", l)
	}
	r.filter.stopping.Store(true)
	r.log.Warn(msg)
	if l := r.one(); l.Level != "info" {
		t.Fatalf("stopping: %+v, want info", l)
	}
}

// TestRaftLeadershipMoving: Apply errors of a node that is not, or stops being, the
// leader are NOT_CONTROLLER (retried at the next controller), not UNKNOWN_SERVER_ERROR
// logged at ERROR; other errors are not.
func TestRaftLeadershipMoving(t *testing.T) {
	for _, err := range []error{raft.ErrNotLeader, raft.ErrLeadershipLost, raft.ErrLeadershipTransferInProgress, raft.ErrRaftShutdown} {
		if !raftLeadershipMoving(err) {
			t.Errorf("%v: not taken as leadership moving", err)
		}
		if code := errorCode(fmt.Errorf("%w: %v", controller.ErrNotController, err)); code != 41 {
			t.Errorf("%v: code %d, want NOT_CONTROLLER (41)", err, code)
		}
	}
	if raftLeadershipMoving(raft.ErrEnqueueTimeout) || raftLeadershipMoving(io.ErrShortWrite) {
		t.Error("an enqueue timeout or a write error taken as leadership moving")
	}
}

// TestRaftLogger_NoPeersWhileJoining: a non-voter waiting to be added has no
// configuration, which raft logs at WARN: INFO on a joining node, WARN elsewhere.
func TestRaftLogger_NoPeersWhileJoining(t *testing.T) {
	for _, joining := range []bool{false, true} {
		r := newRaftLogRecorder(t)
		r.filter.joining = joining
		r.log.Warn("no known peers, aborting election")
		want := map[bool]string{false: "warn", true: "info"}[joining]
		if l := r.one(); l.Level != want {
			t.Errorf("joining %v: %+v, want %s", joining, l, want)
		}
	}
}

// TestWarningDue: a condition is WARN once it has lasted raftPeerWarnAfter, then once
// per raftPeerWarnEvery.
func TestWarningDue(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	for _, tc := range []struct {
		warned, now time.Time
		want        bool
	}{
		{time.Time{}, at(raftPeerWarnAfter - time.Millisecond), false},
		{time.Time{}, at(raftPeerWarnAfter), true},
		{at(raftPeerWarnAfter), at(raftPeerWarnAfter + raftPeerWarnEvery - time.Millisecond), false},
		{at(raftPeerWarnAfter), at(raftPeerWarnAfter + raftPeerWarnEvery), true},
	} {
		if got := warningDue(start, tc.warned, tc.now); got != tc.want {
			t.Errorf("warned %v, now %v: %v, want %v", tc.warned.Sub(start), tc.now.Sub(start), got, tc.want)
		}
	}
}
