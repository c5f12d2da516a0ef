package rpc

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
)

// SecureDialer adds a listener's security to the connections a DialFunc opens: a TLS
// handshake, then SASL authentication (AuthenticateSASL), as the protocol of the
// listener dialed needs.
type SecureDialer struct {
	// TLS, when set, returns the client TLS configuration for the host dialed.
	TLS func(host string) (*tls.Config, error)
	// Mechanism, when set, is the SASL mechanism to authenticate with; NewStep starts
	// one client exchange of it.
	Mechanism string
	NewStep   func() (SASLClientStep, error)
}

// Wrap returns dial with the handshake and authentication after each connection, as
// clientID; a connection that fails either is closed.
func (d SecureDialer) Wrap(dial DialFunc, clientID string) DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil || (d.TLS == nil && d.Mechanism == "") {
			return nc, err
		}
		if d.TLS != nil {
			host, _, _ := net.SplitHostPort(addr)
			tc, err := d.TLS(host)
			if err != nil {
				nc.Close()
				return nil, err
			}
			conn := tls.Client(nc, tc)
			if err := conn.HandshakeContext(ctx); err != nil {
				nc.Close()
				return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
			}
			nc = conn
		}
		if d.Mechanism != "" {
			step, err := d.NewStep()
			if err != nil {
				nc.Close()
				return nil, err
			}
			if _, err := AuthenticateSASL(ctx, nc, clientID, d.Mechanism, step); err != nil {
				nc.Close()
				return nil, fmt.Errorf("authenticating to %s: %w", addr, err)
			}
		}
		return nc, nil
	}
}
