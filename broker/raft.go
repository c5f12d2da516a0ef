package broker

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/petrel-broker/petrel/fsm"
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
func startRaft(cfg *Config, machine *fsm.FSM, logger hclog.Logger) (*raftNode, error) {
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
	advertise, err := raftAdvertise(cfg.RaftListen)
	if err != nil {
		store.Close()
		return nil, err
	}
	transport, err := raft.NewTCPTransportWithLogger(cfg.RaftListen, advertise, 3, 10*time.Second, logger.Named("transport"))
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("raft listener %s: %w", cfg.RaftListen, err)
	}
	rc := raft.DefaultConfig()
	rc.LocalID = serverID(cfg.NodeID)
	rc.Logger = logger
	rc.HeartbeatTimeout = 500 * time.Millisecond
	rc.ElectionTimeout = 500 * time.Millisecond
	rc.LeaderLeaseTimeout = 250 * time.Millisecond
	rc.CommitTimeout = 5 * time.Millisecond
	rc.SnapshotThreshold = 8192
	rc.SnapshotInterval = 2 * time.Minute

	hasState, err := raft.HasExistingState(store, store, snaps)
	if err != nil {
		transport.Close()
		store.Close()
		return nil, err
	}
	if !hasState {
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

// raftAdvertise resolves the address other voters use. A listener on port 0 advertises
// the port it binds (nil lets the transport use its listener address).
func raftAdvertise(listen string) (net.Addr, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, err
	}
	if port == "0" || host == "" || net.ParseIP(host).IsUnspecified() {
		return nil, nil
	}
	return net.ResolveTCPAddr("tcp", listen)
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
