package broker

import (
	"cmp"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/petrel-broker/petrel/fsm"
	"github.com/petrel-broker/petrel/rpc"
)

// raftStore is the Raft log store the node closes at stop (raft-boltdb's BoltStore).
type raftStore interface {
	raft.LogStore
	io.Closer
}

// raftNode bundles hashicorp/raft with its stores and transport.
type raftNode struct {
	raft      *raft.Raft
	store     raftStore // the raft-boltdb log and stable store
	transport *raft.NetworkTransport
	conns     *raftConns
	logger    hclog.Logger
	// stopTimeout bounds the wait for Raft's goroutines at close.
	stopTimeout time.Duration
	// resignTimeout bounds the leadership transfer of a clean stop.
	resignTimeout time.Duration
	// meta is store as the metadata store whose failed writes fence this node
	// (metadata_store.go); nil in tests that build a node on other stores.
	meta *metadataStore
	// logFilter is the filter of hashicorp/raft's lines (raft_logger.go); nil in tests
	// that build a node on their own logger.
	logFilter *raftLogFilter
	// removed are the members this node removed from the configuration: raft's
	// errors about them are logged at Debug (raft_removed_peers.go); nil in tests
	// that build a node on other stores.
	removed *removedPeers
	// nudge sends the commits of the controller's writes to the followers at once
	// (raft_commit_nudge.go).
	nudge commitNudge
}

// serverID is a node id as a Raft server id.
func serverID(id int32) raft.ServerID { return raft.ServerID(strconv.Itoa(int(id))) }

// startRaft opens the Raft log and stable store (raft-boltdb, fsynced), the file snapshot
// store and the TCP transport, and bootstraps the voters on first start.
func startRaft(cfg *Config, machine *fsm.FSM, dial rpc.DialFunc, logger hclog.Logger) (*raftNode, error) {
	dir := cfg.raftDir()
	if err := ensureDir(dir); err != nil {
		return nil, err
	}
	ln := cfg.RaftListener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", cfg.RaftListen); err != nil {
			return nil, fmt.Errorf("raft listener %s: %w", cfg.RaftListen, err)
		}
	}
	// The transport's security first: a refusal (plaintext Raft on a cluster that
	// authenticates clients) opens no store.
	conns := newRaftConns()
	raw := ln
	ln, dial, err := secureRaft(cfg, conns.listener(ln), conns.dial(dial))
	if err != nil {
		raw.Close()
		return nil, err
	}
	bolt, err := raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("opening raft store: %w", err)
	}
	store := newMetadataStore(bolt) // a failed write fences this node's Raft (metadata_store.go)
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, logger.Named("snapshots"))
	if err != nil {
		ln.Close()
		store.Close()
		return nil, err
	}
	// Raft's own lines go through the filter that gives routine events their level
	// (raft_logger.go); Petrel's lines about Raft keep the plain logger.
	rc := raftConfig(cfg, logger)
	filter := newRaftLogFilter(rc, time.Now)
	filter.joining = isObserver(cfg)
	filter.removed = newRemovedPeers()
	rc.Logger = newRaftLogger(logger, filter)
	transport := newRaftTransport(cfg, ln, dial, rc.Logger)

	hasState, err := raft.HasExistingState(store, store, snaps)
	if err != nil {
		transport.Close()
		store.Close()
		return nil, err
	}
	if err := checkJoinable(cfg, hasState); err != nil { // raft_membership.go
		transport.Close()
		store.Close()
		return nil, err
	}
	if !hasState && !isObserver(cfg) {
		voters := cfg.Voters
		if len(voters) == 0 {
			voters = []Voter{{cfg.NodeID, string(transport.LocalAddr())}}
		}
		var servers []raft.Server
		for _, v := range voters {
			servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: serverID(v.ID), Address: raft.ServerAddress(v.Addr)})
		}
		if err := raft.BootstrapCluster(rc, store, store, snaps, transport, raft.Configuration{Servers: servers}); err != nil {
			transport.Close()
			store.Close()
			return nil, fmt.Errorf("bootstrapping raft: %w", err)
		}
	}
	r, err := raft.NewRaft(rc, machine, raftLogCache(store), store, snaps, transport)
	if err != nil {
		transport.Close()
		store.Close()
		return nil, err
	}
	n := newRaftNode(r, store, transport, conns, rc, logger)
	n.meta, n.logFilter, n.removed = store, filter, filter.removed
	if hasState {
		// NewRaft has read the configuration from the snapshot and the log; nothing has
		// been sent yet (a follower waits a heartbeat timeout before it campaigns).
		if err := checkPersistedVoters(cfg, r.GetConfiguration().Configuration()); err != nil {
			n.close()
			return nil, err
		}
	}
	electSoleVoterAtOnce(r, rc.LocalID) // raft_sole_voter.go
	filter.watchResumedHeartbeats(r, rc.Logger)
	return n, nil
}

// raftLogCacheEntries is how many of the newest Raft log entries the leader keeps in
// memory (hashicorp/raft's LogCache).
const raftLogCacheEntries = 16

// raftLogCache puts a LogCache in front of the log store: the leader sends each new
// entry, and the previous entry's term, from memory instead of reading them back from
// raft.db and decoding them once per follower, which for the first entry of a
// controlled shutdown at 100,000 partitions (3 MB) sits between its commit and the
// stopping broker's answer. The cache holds raftLogCacheEntries entries (most are a few
// KiB; at 100,000 partitions the largest are 1–3 MB); raft.db stays the durable copy
// and is what is closed.
func raftLogCache(store raftStore) raft.LogStore {
	c, err := raft.NewLogCache(raftLogCacheEntries, store)
	if err != nil {
		return store // only for a capacity below 1
	}
	return c
}

func newRaftNode(r *raft.Raft, store raftStore, transport *raft.NetworkTransport, conns *raftConns, rc *raft.Config, logger hclog.Logger) *raftNode {
	return &raftNode{raft: r, store: store, transport: transport, conns: conns, logger: logger,
		stopTimeout: raftStopTimeout, resignTimeout: max(2*rc.ElectionTimeout, time.Second)}
}

// raftMaxRPCsInFlight is 1: replication is never pipelined (a variable only so that
// BenchmarkRaftReplicate can compare with the pipeline).
var raftMaxRPCsInFlight = 1

// newRaftTransport is hashicorp/raft's TCP transport with pipelining off
// (MaxRPCsInFlight 1: one AppendEntries in flight per follower). hashicorp/raft's
// pipeline can deadlock: when a follower answers one pipelined AppendEntries with a
// failure or a newer term, the pipeline's response decoder stops reading while the
// sender may still be parked handing it the next request, and neither channel has a
// deadline; replication to that follower stops and raft.Shutdown waits for the parked
// goroutine forever. Seen at 30,000 partitions with leader churn; synchronous
// replication has every wait bounded by controller.quorum.request.timeout.ms.
func newRaftTransport(cfg *Config, ln net.Listener, dial rpc.DialFunc, logger hclog.Logger) *raft.NetworkTransport {
	timeout := cfg.durationMs("controller.quorum.request.timeout.ms")
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:          &streamLayer{Listener: ln, dial: dial, timeout: timeout},
		MaxPool:         3,
		MaxRPCsInFlight: raftMaxRPCsInFlight,
		Timeout:         timeout,
		Logger:          logger.Named("transport"),
	})
}

// raftConfig is the hashicorp/raft configuration of this node.
func raftConfig(cfg *Config, logger hclog.Logger) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = serverID(cfg.NodeID)
	rc.Logger = logger
	quorumTimeouts(cfg, rc)
	soleVoterLease(cfg, rc)
	rc.CommitTimeout = raftCommitTimeout
	rc.SnapshotThreshold = 8192
	rc.SnapshotInterval = 2 * time.Minute
	return rc
}

// quorumTimeouts maps Kafka's controller.quorum.* timeouts onto hashicorp/raft's:
// fetch.timeout.ms is both how long a follower waits without hearing from the leader
// (HeartbeatTimeout, randomized by raft to 1-2 times it) and how long a leader keeps
// leading without hearing from a majority (LeaderLeaseTimeout, which raft requires to
// be at most HeartbeatTimeout); election.timeout.ms is how long a candidate waits for
// votes (ElectionTimeout, which raft requires to be at least HeartbeatTimeout). The
// leader lease at 500 ms has held on loaded 2-core machines since the first release.
func quorumTimeouts(cfg *Config, rc *raft.Config) {
	fetch := cfg.durationMs("controller.quorum.fetch.timeout.ms")
	rc.HeartbeatTimeout = fetch
	rc.LeaderLeaseTimeout = fetch
	rc.ElectionTimeout = max(cfg.durationMs("controller.quorum.election.timeout.ms"), fetch)
}

// isObserver reports a node that is not among the listed voters: it joins as a
// non-voter instead of bootstrapping.
func isObserver(cfg *Config) bool {
	if len(cfg.Voters) == 0 {
		return false
	}
	for _, v := range cfg.Voters {
		if v.ID == cfg.NodeID {
			return false
		}
	}
	return true
}

// raftStopTimeout bounds how long close waits for hashicorp/raft's goroutines after
// its transport is cut; past it the stores are closed anyway (their operations then
// fail) so that the data directory is released.
const raftStopTimeout = 3 * time.Second

// shutdown is a clean stop: a leader hands leadership to an up-to-date voter first (as
// a KRaft controller resigns), so the quorum does not wait out an election timeout,
// then the node closes.
func (n *raftNode) shutdown() error {
	n.resign()
	return n.close()
}

// beginStop tells the log filter that this node is stopping gracefully: from now on a
// lost quorum is routine (the other voters may be stopping too).
func (n *raftNode) beginStop() {
	if n.logFilter != nil {
		n.logFilter.stopping.Store(true)
	}
}

// resign transfers leadership when this node is the leader of a quorum of several
// voters, waiting at most resignTimeout.
func (n *raftNode) resign() {
	if n.raft.State() != raft.Leader {
		return
	}
	cf := n.raft.GetConfiguration()
	if cf.Error() != nil {
		return
	}
	voters := 0
	for _, s := range cf.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			voters++
		}
	}
	if voters < 2 {
		return
	}
	done := make(chan error, 1)
	go func() { done <- n.raft.LeadershipTransfer().Error() }()
	timer := time.NewTimer(n.resignTimeout)
	defer timer.Stop()
	// A failed transfer costs the others one election timeout, and is what happens when
	// the whole cluster stops at once (the chosen voter is stopping too): INFO.
	select {
	case err := <-done:
		if err != nil {
			n.logger.Info("leadership transfer before stopping failed; the other voters elect a leader after their election timeout", "error", err)
		}
	case <-timer.C:
		n.logger.Info("leadership transfer before stopping timed out; the other voters elect a leader after their election timeout", "timeout", n.resignTimeout)
	}
}

// close stops Raft in bounded time, in order: raft.Shutdown tells its goroutines to
// stop; the transport and every Raft connection are closed at once, so a goroutine
// blocked in a network read or write (a snapshot streamed to or from a stalled peer)
// returns instead of holding the shutdown; then the wait for the goroutines, bounded
// by stopTimeout; and last the stores, whatever happened before, so that the data
// directory's raft.db lock is never leaked.
func (n *raftNode) close() error {
	start := time.Now()
	future := n.raft.Shutdown()
	err := n.transport.Close()
	n.conns.closeAll()
	done := make(chan error, 1)
	go func() { done <- future.Error() }()
	timer := time.NewTimer(n.stopTimeout)
	defer timer.Stop()
	select {
	case e := <-done:
		err = cmp.Or(e, err)
	case <-timer.C:
		n.logger.Error("raft did not stop in time; closing its stores anyway", "timeout", n.stopTimeout)
		err = cmp.Or(err, fmt.Errorf("raft did not stop within %s", n.stopTimeout))
	}
	if e := n.store.Close(); err == nil {
		err = e
	}
	n.logger.Info("raft stopped", "elapsed", time.Since(start).Round(time.Millisecond))
	return err
}
