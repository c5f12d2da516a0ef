package broker

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/rpc"
)

// raftSecurityProperty chooses the Raft transport's security: SSL (mutual TLS) or
// PLAINTEXT. Unset, it is SSL when the inter-broker listener uses TLS (SSL or
// SASL_SSL), so a secured cluster secures its quorum too.
const raftSecurityProperty = "petrel.raft.security.protocol"

func init() {
	def := configDef{Name: raftSecurityProperty, Type: TypeString, Default: "", ReadOnly: true, Validator: oneOf("", protocolPlaintext, protocolSSL),
		Doc: "Petrel's own: the security of the Raft transport (--raft-listen). SSL is mutual TLS with the inter-broker listener's certificates " +
			"(listener.name.<inter-broker listener>.ssl.*, else ssl.*): each node presents its keystore certificate and accepts only peers whose certificate " +
			"its truststore verifies, so a node without them cannot join the quorum. Unset, SSL when the inter-broker listener uses TLS, else PLAINTEXT."}
	brokerConfigDefs = append(brokerConfigDefs, def)
	brokerConfigByName[def.Name] = def
}

// raftTLS returns the Raft transport's server and client TLS configurations, or nils
// for a plaintext transport.
func (c *Config) raftTLS() (server *tls.Config, client func(host string) (*tls.Config, error), err error) {
	mode, _ := c.brokerValue(raftSecurityProperty)
	inter := c.interBrokerListenerName()
	if mode == "" {
		specs, err := c.listenerSpecs()
		if err != nil {
			return nil, nil, err
		}
		mode = protocolPlaintext
		for _, s := range specs {
			if s.Name == inter && s.tls() {
				mode = protocolSSL
			}
		}
	}
	if mode != protocolSSL {
		return nil, nil, nil
	}
	st := c.sslSettings(inter)
	st.ClientAuth = "required"
	server, err = auth.ServerTLSConfig(st)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: Raft transport TLS (%s=SSL, certificates of listener %s): %w", ErrInvalidBrokerConfig, raftSecurityProperty, inter, err)
	}
	if _, err := auth.ClientTLSConfig(st, ""); err != nil {
		return nil, nil, fmt.Errorf("%w: Raft transport TLS: %w", ErrInvalidBrokerConfig, err)
	}
	return server, func(host string) (*tls.Config, error) { return auth.ClientTLSConfig(st, host) }, nil
}

// secureRaft wraps the Raft listener and dialer in mutual TLS when configured.
func secureRaft(cfg *Config, ln net.Listener, dial rpc.DialFunc) (net.Listener, rpc.DialFunc, error) {
	server, client, err := cfg.raftTLS()
	if err != nil || server == nil {
		return ln, dial, err
	}
	tlsDial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		host, _, _ := net.SplitHostPort(addr)
		tc, err := client(host)
		if err != nil {
			nc.Close()
			return nil, err
		}
		conn := tls.Client(nc, tc)
		if err := conn.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("raft TLS handshake with %s: %w", addr, err)
		}
		return conn, nil
	}
	return tls.NewListener(ln, server), tlsDial, nil
}
