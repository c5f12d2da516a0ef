package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/rpc"
)

// raftHandshakeTimeout bounds the TLS handshake of an accepted Raft connection: a
// stranger that connects and says nothing holds nothing for longer.
const raftHandshakeTimeout = 10 * time.Second

// secureRaft decides the Raft transport's security (raftSecurity) and wraps the Raft
// listener and dialer in mutual TLS with the peer principal check when it is SSL. A
// plaintext transport on a cluster whose listeners authenticate is logged at WARN, at
// every start; refused unless asked for, it never gets here.
func secureRaft(cfg *Config, ln net.Listener, dial rpc.DialFunc) (net.Listener, rpc.DialFunc, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	logger = logger.Named("raft")
	sec, err := cfg.raftSecurity()
	if err != nil {
		return ln, dial, err
	}
	if w := sec.unauthenticatedWarning(); w != "" {
		logger.Warn(w)
	}
	if sec.server == nil {
		return ln, dial, nil
	}
	logger.Info("Raft transport uses mutual TLS", "allowed_principals", sec.allowed)
	tlsDial := rpc.SecureDialer{TLS: sec.client}.Wrap(dial, "")
	return &raftTLSListener{Listener: ln, config: sec.server, logger: logger}, tlsDial, nil
}

// raftTLSListener accepts TLS connections whose handshake, and with it the peer's
// certificate and principal check, runs on the connection's first read or write, on
// hashicorp/raft's goroutine for the connection, so a slow stranger never holds the
// accept loop. A refused connection reads as io.EOF (hashicorp/raft closes it
// quietly) and is logged here once.
type raftTLSListener struct {
	net.Listener
	config *tls.Config
	logger hclog.Logger
}

// Accept returns the next connection with its handshake still to run.
func (l *raftTLSListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &raftServerConn{Conn: tls.Server(c, l.config), logger: l.logger}, nil
}

// raftServerConn is an accepted Raft connection: nothing is read from or written to
// it before its handshake has succeeded.
type raftServerConn struct {
	*tls.Conn
	logger hclog.Logger
	once   sync.Once
	// err is the handshake's outcome, set once under once.
	err error
}

// handshake runs the TLS handshake once, bounded by raftHandshakeTimeout; a failure
// closes the connection.
func (c *raftServerConn) handshake() error {
	c.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), raftHandshakeTimeout)
		defer cancel()
		if err := c.Conn.HandshakeContext(ctx); err != nil {
			c.err = err
			c.Conn.Close()
			remote := c.Conn.RemoteAddr().String()
			if quietHandshakeFailure(err) {
				c.logger.Debug("raft connection closed during its TLS handshake", "remote", remote, "error", err)
			} else {
				c.logger.Warn("refused a Raft connection", "remote", remote, "error", err)
			}
		}
	})
	return c.err
}

// Read reads after the handshake; a refused connection reads as io.EOF.
func (c *raftServerConn) Read(p []byte) (int, error) {
	if c.handshake() != nil {
		return 0, io.EOF
	}
	return c.Conn.Read(p)
}

// Write writes after the handshake.
func (c *raftServerConn) Write(p []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// quietHandshakeFailure reports a handshake that ended because the connection did
// (a peer stopping, this node stopping, a silent dialer timed out) rather than because
// a certificate or the protocol was refused.
func quietHandshakeFailure(err error) bool {
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
