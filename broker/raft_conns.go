package broker

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/petrel-broker/petrel/rpc"
)

// errRaftConnsClosed is what a Raft dial returns once the node is stopping.
var errRaftConnsClosed = errors.New("raft transport stopping")

// raftConns tracks every connection of one node's Raft transport, accepted and
// dialed, so that a stopping node can close them all at once: hashicorp/raft's
// NetworkTransport.Close closes only its listener, while a replication goroutine blocked
// writing a snapshot (its deadline is controller.quorum.request.timeout.ms per 256 KiB)
// or a follower blocked reading one (no deadline) would hold raft.Shutdown for minutes.
type raftConns struct {
	mu     sync.Mutex
	conns  map[*trackedConn]struct{}
	closed bool
}

func newRaftConns() *raftConns { return &raftConns{conns: make(map[*trackedConn]struct{})} }

// track registers c, or closes it and fails once the node is stopping.
func (t *raftConns) track(c net.Conn) (net.Conn, error) {
	tc := &trackedConn{Conn: c, owner: t}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		c.Close()
		return nil, errRaftConnsClosed
	}
	t.conns[tc] = struct{}{}
	return tc, nil
}

func (t *raftConns) forget(c *trackedConn) {
	t.mu.Lock()
	delete(t.conns, c)
	t.mu.Unlock()
}

// closeAll closes every tracked connection and refuses new ones; blocked reads and
// writes on them return at once.
func (t *raftConns) closeAll() {
	t.mu.Lock()
	t.closed = true
	conns := t.conns
	t.conns = make(map[*trackedConn]struct{})
	t.mu.Unlock()
	for c := range conns {
		c.Conn.Close()
	}
}

// listener wraps ln so that accepted connections are tracked.
func (t *raftConns) listener(ln net.Listener) net.Listener {
	return &trackedListener{Listener: ln, owner: t}
}

// dial wraps dial so that dialed connections are tracked.
func (t *raftConns) dial(dial rpc.DialFunc) rpc.DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return t.track(c)
	}
}

type trackedConn struct {
	net.Conn
	owner *raftConns
	once  sync.Once
}

// Close closes the connection and stops tracking it.
func (c *trackedConn) Close() error {
	c.once.Do(func() { c.owner.forget(c) })
	return c.Conn.Close()
}

type trackedListener struct {
	net.Listener
	owner *raftConns
}

// Accept accepts and tracks a connection; once the node is stopping it closes it.
func (l *trackedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if tc, err := l.owner.track(c); err == nil {
			return tc, nil
		}
	}
}

// streamLayer is Raft's transport over a listener and a dial function, so that tests
// can cut a node's Raft traffic.
type streamLayer struct {
	net.Listener
	dial    rpc.DialFunc
	timeout time.Duration // controller.quorum.request.timeout.ms (raft_deadline.go)
}

// Dial opens a connection to another Raft member.
func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := s.dial(ctx, "tcp", string(address))
	if err != nil {
		return nil, err
	}
	return &sizedDeadlineConn{Conn: c, unit: s.timeout}, nil // raft_deadline.go
}
