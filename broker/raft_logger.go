package broker

// The Raft log filter: hashicorp/raft logs the routine events of a healthy quorum at WARN
// and ERROR (an election at bootstrap, a follower catching up, a peer restarting, its
// own connections closing at shutdown), so that an alert on those levels would fire at
// every bootstrap and rolling restart. raftLogger sits between hashicorp/raft and the
// node's logger and gives each known message the level it deserves:
//
//   - routine events (election start, catch-up, a deposed leader stepping down, a
//     connection closed under the transport's reader) go down to INFO or DEBUG;
//   - a peer that cannot be reached is an episode per peer: its first failure at INFO,
//     the retries at DEBUG, WARN once it has lasted raftPeerWarnAfter and then at most
//     once per raftPeerWarnEvery, and INFO "raft peer reachable again" when Raft's
//     heartbeats to it resume. A peer that stays away is never hidden.
//
// Messages it does not know keep their level, and so do the quorum's: a lost quorum is
// WARN unless this node is stopping itself.

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

const (
	// raftPeerWarnAfter is how long a peer may stay unreachable before it is logged at
	// WARN: long enough for a restart, short enough for an operator to hear of a
	// broker that is down.
	raftPeerWarnAfter = 30 * time.Second
	// raftPeerWarnEvery bounds the WARN lines about one peer that stays unreachable.
	raftPeerWarnEvery = time.Minute
	// raftPeerForgetAfter is the shortest silence after which a peer's failures are
	// taken as over even without a resumed heartbeat (after this node lost the
	// leadership, or when the peer answered votes but was never heartbeated); it is
	// raised to cover Raft's retry interval (raftLogFilter.forgetAfter).
	raftPeerForgetAfter = 10 * time.Second
)

// raftMessageLevels are the routine messages of hashicorp/raft and the level each is
// logged at instead of raft's own.
var raftMessageLevels = map[string]hclog.Level{
	// A follower that hears no leader, or a candidate whose vote did not conclude:
	// every bootstrap and every leader change. A quorum that stays unreachable shows as
	// its unreachable peers.
	"heartbeat timeout reached, starting election":  hclog.Info,
	"Election timeout reached, restarting election": hclog.Info,
	// A leader or candidate that learns of a newer term or a new leader: a leadership
	// transfer at a clean stop, or an election it lost.
	"new leader elected, stepping down":                          hclog.Info,
	"peer has newer term, stopping replication":                  hclog.Info,
	"rejecting vote request since we have a leader":              hclog.Info,
	"rejecting pre-vote request since we have a leader":          hclog.Info,
	"rejecting vote request since our last term is greater":      hclog.Info,
	"rejecting vote request since our last index is greater":     hclog.Info,
	"rejecting pre-vote request since our last term is greater":  hclog.Info,
	"rejecting pre-vote request since our last index is greater": hclog.Info,
	"duplicate requestVote from":                                 hclog.Debug,
	// A follower that is behind, or that joined empty, is brought up to date by the
	// leader walking back its log: the follower's side (for "failed to get previous
	// log", only when the entry is missing: raftLogFilter.decide) and the leader's.
	"failed to get previous log":                 hclog.Debug,
	"previous log term mis-match":                hclog.Info,
	"clearing log suffix":                        hclog.Info,
	"appendEntries rejected, sending older logs": hclog.Debug,
}

// raftStoppingMessages are raft's messages about losing the quorum that are routine once
// this node is stopping: the other voters may be stopping too (the whole cluster
// stopped at once). They are logged at INFO then, at their own level otherwise.
var raftStoppingMessages = map[string]bool{
	"failed to contact quorum of nodes, stepping down": true,
}

// raftJoiningMessages are raft's messages that are routine on a node joining as a
// non-voter, which has no configuration until the leader adds it: INFO there (a join
// that does not succeed is Petrel's WARN, joinLoop), their own level on other nodes.
var raftJoiningMessages = map[string]bool{
	"no known peers, aborting election": true,
}

// raftPeerMessages are raft's messages about a failed call to one peer, with the
// argument that names the peer.
var raftPeerMessages = map[string]string{
	"failed to appendEntries to":              "peer",
	"failed to heartbeat to":                  "peer",
	"failed to make requestVote RPC":          "target",
	"failed to contact":                       "server-id",
	"failed to send snapshot to":              "peer",
	"failed to install snapshot":              "peer",
	"failed to start pipeline replication to": "peer",
	"failed to pipeline appendEntries":        "peer",
}

// raftConnMessages are the transport's messages about a connection that failed under
// its reader or writer: at DEBUG when the connection was closed (this node stopping, or
// the peer gone, which the peer's failures report), at their own level otherwise.
var raftConnMessages = map[string]bool{
	"failed to decode incoming command": true,
	"failed to flush response":          true,
}

// raftLogFilter is the state shared by a node's raftLoggers: the open episodes of
// unreachable peers. Safe for concurrent use.
type raftLogFilter struct {
	// now is the clock (time.Now; tests inject theirs).
	now func() time.Time
	// forgetAfter is the silence that ends an episode without a resumed heartbeat.
	forgetAfter time.Duration
	// stopping is set when the node starts a graceful stop (raftNode.beginStop).
	stopping atomic.Bool
	// joining is set on a node that joins as a non-voter; set before raft starts.
	joining bool
	// removed are the members this node removed from the configuration, whose failures
	// are logged at Debug (raft_removed_peers.go); set before raft starts, nil in tests.
	removed *removedPeers

	mu sync.Mutex
	// peers are the open episodes by peer key (its Raft address, or "id N" when only
	// the id is known); guarded by mu.
	peers map[string]*peerEpisode
	// addrs maps a server id to its address, learned from raft's messages; guarded by mu.
	addrs map[raft.ServerID]raft.ServerAddress
}

// peerEpisode is one stretch of failures to reach a peer.
type peerEpisode struct {
	start, last time.Time // the first and the latest failure
	failures    int       // failures logged so far
	warned      time.Time // when the episode was last logged at WARN; zero before
}

// newRaftLogFilter returns a filter whose episodes end after a silence of at least
// raftPeerForgetAfter and of three times the longest retry interval raft uses with rc
// (half the heartbeat timeout between heartbeats, up to twice the election timeout
// between votes).
func newRaftLogFilter(rc *raft.Config, now func() time.Time) *raftLogFilter {
	forget := raftPeerForgetAfter
	if rc != nil {
		forget = max(forget, 3*rc.HeartbeatTimeout, 6*rc.ElectionTimeout)
	}
	return &raftLogFilter{now: now, forgetAfter: forget,
		peers: map[string]*peerEpisode{}, addrs: map[raft.ServerID]raft.ServerAddress{}}
}

// raftLogger is the logger given to hashicorp/raft: every line goes through its filter
// to the node's logger. The loggers made from it by With and Named share the filter.
type raftLogger struct {
	hclog.Logger
	filter *raftLogFilter
}

// newRaftLogger wraps logger with filter.
func newRaftLogger(logger hclog.Logger, filter *raftLogFilter) hclog.Logger {
	return &raftLogger{Logger: logger, filter: filter}
}

func (l *raftLogger) Log(level hclog.Level, msg string, args ...any) {
	level, msg, args = l.filter.decide(level, msg, args)
	l.Logger.Log(level, msg, args...)
}

func (l *raftLogger) Trace(msg string, args ...any) { l.Log(hclog.Trace, msg, args...) }
func (l *raftLogger) Debug(msg string, args ...any) { l.Log(hclog.Debug, msg, args...) }
func (l *raftLogger) Info(msg string, args ...any)  { l.Log(hclog.Info, msg, args...) }
func (l *raftLogger) Warn(msg string, args ...any)  { l.Log(hclog.Warn, msg, args...) }
func (l *raftLogger) Error(msg string, args ...any) { l.Log(hclog.Error, msg, args...) }

func (l *raftLogger) With(args ...any) hclog.Logger {
	return &raftLogger{Logger: l.Logger.With(args...), filter: l.filter}
}

func (l *raftLogger) Named(name string) hclog.Logger {
	return &raftLogger{Logger: l.Logger.Named(name), filter: l.filter}
}

func (l *raftLogger) ResetNamed(name string) hclog.Logger {
	return &raftLogger{Logger: l.Logger.ResetNamed(name), filter: l.filter}
}

// decide returns the level, message and arguments a raft line is logged with.
func (f *raftLogFilter) decide(level hclog.Level, msg string, args []any) (hclog.Level, string, []any) {
	if level < hclog.Warn {
		return level, msg, args
	}
	if f.removed != nil && f.removed.names(args) {
		return hclog.Debug, msg, args // a member removed for good (raft_removed_peers.go)
	}
	if to, ok := raftMessageLevels[msg]; ok {
		if msg == "failed to get previous log" && !errors.Is(argError(args), raft.ErrLogNotFound) {
			return level, msg, args // a log that cannot be read
		}
		return to, msg, args
	}
	if raftStoppingMessages[msg] && f.stopping.Load() || raftJoiningMessages[msg] && f.joining {
		return hclog.Info, msg, args
	}
	if raftConnMessages[msg] && connClosed(argError(args)) {
		return hclog.Debug, msg, args
	}
	if key, ok := raftPeerMessages[msg]; ok {
		if peer := f.peerKey(argValue(args, key)); peer != "" {
			return f.peerFailure(peer, level, msg, args)
		}
	}
	return level, msg, args
}

// peerFailure counts a failure to reach peer and returns how it is logged: the first
// of an episode at INFO, the others at DEBUG, and at WARN (with how long and how many)
// once the episode has lasted raftPeerWarnAfter, then once per raftPeerWarnEvery.
func (f *raftLogFilter) peerFailure(peer string, level hclog.Level, msg string, args []any) (hclog.Level, string, []any) {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	ep := f.peers[peer]
	if ep == nil || now.Sub(ep.last) > f.forgetAfter {
		f.peers[peer] = &peerEpisode{start: now, last: now, failures: 1}
		return hclog.Info, msg, append(args, "retrying", true)
	}
	ep.last = now
	ep.failures++
	if !warningDue(ep.start, ep.warned, now) {
		return hclog.Debug, msg, args
	}
	ep.warned = now
	return min(level, hclog.Warn), msg, append(args, "unreachable_for", now.Sub(ep.start).Round(time.Second), "failures", ep.failures)
}

// warningDue reports whether a condition that began at start, last logged at WARN at
// warned (zero: never), is due a WARN at now: once it has lasted raftPeerWarnAfter,
// then once per raftPeerWarnEvery.
func warningDue(start, warned, now time.Time) bool {
	if now.Sub(start) < raftPeerWarnAfter {
		return false
	}
	return warned.IsZero() || now.Sub(warned) >= raftPeerWarnEvery
}

// reachable ends the episode of the peer with id, if one is open, and returns what to
// log about it (ok false when nothing).
func (f *raftLogFilter) reachable(id raft.ServerID) (args []any, ok bool) {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	keys := []string{"id " + string(id)}
	if addr, known := f.addrs[id]; known {
		keys = append(keys, string(addr))
	}
	var first *peerEpisode // the longest of the episodes under either key
	for _, key := range keys {
		if ep := f.peers[key]; ep != nil {
			delete(f.peers, key)
			if first == nil || ep.start.Before(first.start) {
				first = ep
			}
		}
	}
	if first == nil {
		return nil, false
	}
	return []any{"peer", keys[len(keys)-1], "unreachable_for", now.Sub(first.start).Round(time.Millisecond), "failures", first.failures}, true
}

// peerKey names the peer in a raft argument: its address, or "id N" for an id whose
// address raft's messages have not shown yet.
func (f *raftLogFilter) peerKey(v any) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch p := v.(type) {
	case raft.Server:
		f.addrs[p.ID] = p.Address
		return string(p.Address)
	case raft.ServerAddress:
		return string(p)
	case raft.ServerID:
		if addr, ok := f.addrs[p]; ok {
			return string(addr)
		}
		return "id " + string(p)
	}
	return ""
}

// watchResumedHeartbeats logs the end of a peer's episode when raft's heartbeats to it
// resume. It uses the observer's filter function, which raft calls synchronously for
// every observation, and never queues an observation, so no goroutine reads the
// channel.
func (f *raftLogFilter) watchResumedHeartbeats(r *raft.Raft, logger hclog.Logger) {
	r.RegisterObserver(raft.NewObserver(make(chan raft.Observation), false, func(o *raft.Observation) bool {
		if resumed, ok := o.Data.(raft.ResumedHeartbeatObservation); ok {
			if args, ok := f.reachable(resumed.PeerID); ok {
				logger.Info("raft peer reachable again", args...)
			}
		}
		return false
	}))
}

// argValue returns the value of key in hclog's alternating key/value arguments.
func argValue(args []any, key string) any {
	for i := 0; i+1 < len(args); i += 2 {
		if k, ok := args[i].(string); ok && k == key {
			return args[i+1]
		}
	}
	return nil
}

// argError is the "error" argument of a raft line, if it is an error.
func argError(args []any) error {
	err, _ := argValue(args, "error").(error)
	return err
}

// connClosed reports an error of a connection that was closed, by this node (its
// transport shutting down) or by the peer. It follows Unwrap and, for the msgpack codec's errors, Cause.
func connClosed(err error) bool {
	type causer interface{ Cause() error }
	for depth := 0; err != nil && depth < 8; depth++ {
		for _, target := range []error{raft.ErrTransportShutdown, net.ErrClosed, io.EOF, io.ErrUnexpectedEOF, syscall.ECONNRESET, syscall.EPIPE} {
			if errors.Is(err, target) {
				return true
			}
		}
		var c causer
		if !errors.As(err, &c) {
			return false
		}
		err = c.Cause()
	}
	return false
}
