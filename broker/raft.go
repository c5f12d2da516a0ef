package broker

import (
	"context"
	"fmt"
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

// raftNode bundles hashicorp/raft with its stores and transport.
type raftNode struct {
	raft      *raft.Raft
	store     *raftboltdb.BoltStore
	transport *raft.NetworkTransport
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
	store, err := raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
	if err != nil {
		return nil, fmt.Errorf("opening raft store: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, logger.Named("snapshots"))
	if err != nil {
		store.Close()
		return nil, err
	}
	ln := cfg.RaftListener
	if ln == nil {
		if ln, err = net.Listen("tcp", cfg.RaftListen); err != nil {
			store.Close()
			return nil, fmt.Errorf("raft listener %s: %w", cfg.RaftListen, err)
		}
	}
	if ln, dial, err = secureRaft(cfg, ln, dial); err != nil {
		ln.Close()
		store.Close()
		return nil, err
	}
	transport := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  &streamLayer{Listener: ln, dial: dial},
		MaxPool: 3,
		Timeout: cfg.durationMs("controller.quorum.request.timeout.ms"),
		Logger:  logger.Named("transport"),
	})
	rc := raft.DefaultConfig()
	rc.LocalID = serverID(cfg.NodeID)
	rc.Logger = logger
	quorumTimeouts(cfg, rc)
	rc.CommitTimeout = 5 * time.Millisecond
	rc.SnapshotThreshold = 8192
	rc.SnapshotInterval = 2 * time.Minute

	hasState, err := raft.HasExistingState(store, store, snaps)
	if err != nil {
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
	r, err := raft.NewRaft(rc, machine, store, store, snaps, transport)
	if err != nil {
		transport.Close()
		store.Close()
		return nil, err
	}
	return &raftNode{raft: r, store: store, transport: transport}, nil
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

// streamLayer is Raft's transport over a listener and a dial function, so that tests
// can cut a node's Raft traffic.
type streamLayer struct {
	net.Listener
	dial rpc.DialFunc
}

// Dial opens a connection to another Raft member.
func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return s.dial(ctx, "tcp", string(address))
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

func (n *raftNode) close() error {
	err := n.raft.Shutdown().Error()
	if e := n.transport.Close(); err == nil {
		err = e
	}
	if e := n.store.Close(); err == nil {
		err = e
	}
	return err
}
