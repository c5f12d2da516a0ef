package broker

import (
	"sync"

	"github.com/hashicorp/raft"
)

// removedPeers are the Raft members this node removed from the configuration while it
// led (UnregisterBroker, RemoveRaftVoter). hashicorp/raft stops replicating to a removed
// member only after one last, backed-off attempt to reach it: up to 41 s during which
// its heartbeat goroutine keeps failing at ERROR against a node that is gone for good.
// Those lines are logged at Debug (raftLogFilter.decide), so nothing at the default
// level names a removed broker. Safe for concurrent use.
type removedPeers struct {
	mu    sync.Mutex
	addrs map[raft.ServerAddress]bool // guarded by mu
}

func newRemovedPeers() *removedPeers {
	return &removedPeers{addrs: map[raft.ServerAddress]bool{}}
}

// add records a removed member's address.
func (p *removedPeers) add(addr raft.ServerAddress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.addrs[addr] = true
}

// readded forgets addr: a member there again is reported as any other.
func (p *removedPeers) readded(addr raft.ServerAddress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.addrs, addr)
}

// names reports whether log arguments name a removed member (hashicorp/raft's "peer"
// argument: the server, or its address).
func (p *removedPeers) names(args []any) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.addrs) == 0 {
		return false
	}
	for _, a := range args {
		switch v := a.(type) {
		case raft.ServerAddress:
			if p.addrs[v] {
				return true
			}
		case raft.Server:
			if p.addrs[v.Address] {
				return true
			}
		}
	}
	return false
}
