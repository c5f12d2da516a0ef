package broker

// How the Raft transport is secured, decided once at start from the listeners and two
// properties (rows in config/defs_security.go). The Raft port carries the metadata log
// and elects the controller: whoever can speak Raft to a node can force elections
// (TimeoutNow) or write metadata (AppendEntries), ACLs and SCRAM credentials included.
// So a cluster that authenticates its clients authenticates its quorum: mutual TLS
// where each end checks that the other's certificate carries an allowed principal (a
// CA signature alone admits every application certificate the CA signed), or an
// explicit, logged choice of plaintext.

import (
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/config"
)

// errRaftPeerNotAllowed is the refusal of a Raft peer whose certificate's principal
// is not in petrel.raft.allowed.principals.
var errRaftPeerNotAllowed = errors.New("raft: the peer's certificate principal is not allowed (" + config.RaftAllowedPrincipalsProperty + ")")

// raftSecurity is the Raft transport's security.
type raftSecurity struct {
	// authenticating lists the listeners that use SASL or SSL.
	authenticating []string
	// server is the accepting side's TLS configuration; nil for a plaintext transport.
	server *tls.Config
	// client builds the dialing side's TLS configuration for a peer's host.
	client func(host string) (*tls.Config, error)
	// allowed are the principals a peer's certificate may carry, sorted.
	allowed []string
}

// unauthenticatedWarning is the WARN of a plaintext transport on a cluster whose
// listeners authenticate clients, or "" when there is nothing to warn about.
func (s *raftSecurity) unauthenticatedWarning() string {
	if s.server != nil || len(s.authenticating) == 0 {
		return ""
	}
	return "the Raft transport (--raft-listen) is unauthenticated and unencrypted (" + config.RaftSecurityProtocolProperty + "=PLAINTEXT) although listeners " +
		strings.Join(s.authenticating, ", ") + " authenticate clients: anyone who can reach it can force controller elections and write cluster metadata " +
		"(ACLs, SCRAM credentials); set " + config.RaftSecurityProtocolProperty + "=SSL for mutual TLS"
}

// raftSecurity decides the Raft transport's security: the protocol (the property, or
// SSL when the inter-broker listener uses TLS, or PLAINTEXT), refused when it would be
// an implicit plaintext on a cluster whose listeners authenticate; for SSL, the TLS
// configurations with the peer principal check on both sides.
func (c *Config) raftSecurity() (*raftSecurity, error) {
	specs, err := c.listenerSpecs()
	if err != nil {
		return nil, err
	}
	inter := c.interBrokerListenerName()
	sec := &raftSecurity{}
	var interSpec config.ListenerSpec
	for _, s := range specs {
		if s.Protocol != config.SecurityProtocolPlaintext {
			sec.authenticating = append(sec.authenticating, s.Name)
		}
		if s.Name == inter {
			interSpec = s
		}
	}
	mode, explicit := c.Properties[config.RaftSecurityProtocolProperty]
	if !explicit || mode == "" {
		explicit, mode = false, config.SecurityProtocolPlaintext
		if interSpec.TLS() {
			mode = config.SecurityProtocolSSL
		}
	}
	listed, listedSet := c.Properties[config.RaftAllowedPrincipalsProperty]
	if mode != config.SecurityProtocolSSL {
		if listedSet {
			return nil, fmt.Errorf("%w: %s is set but the Raft transport is PLAINTEXT, which has no certificates to check: set %s=SSL",
				config.ErrInvalidBrokerConfig, config.RaftAllowedPrincipalsProperty, config.RaftSecurityProtocolProperty)
		}
		if len(sec.authenticating) > 0 && !explicit {
			return nil, fmt.Errorf("%w: listeners %s authenticate clients but the Raft transport (--raft-listen) would be plaintext and unauthenticated "+
				"(the inter-broker listener %s does not use TLS), so anyone who reaches it could force controller elections and write cluster metadata: "+
				"set %s=SSL (mutual TLS with the ssl.* certificates of listener %s, peers limited by %s), "+
				"or %s=PLAINTEXT to run an unauthenticated quorum on a trusted network",
				config.ErrInvalidBrokerConfig, strings.Join(sec.authenticating, ", "), inter, config.RaftSecurityProtocolProperty, inter, config.RaftAllowedPrincipalsProperty, config.RaftSecurityProtocolProperty)
		}
		return sec, nil
	}

	st := c.sslSettings(inter)
	st.ClientAuth = "required"
	server, err := auth.ServerTLSConfig(st)
	if err != nil {
		return nil, fmt.Errorf("%w: Raft transport TLS (%s=SSL, certificates of listener %s): %w", config.ErrInvalidBrokerConfig, config.RaftSecurityProtocolProperty, inter, err)
	}
	if _, err := auth.ClientTLSConfig(st, ""); err != nil {
		return nil, fmt.Errorf("%w: Raft transport TLS: %w", config.ErrInvalidBrokerConfig, err)
	}
	if listedSet {
		if sec.allowed, err = parseRaftPrincipals(listed); err != nil {
			return nil, err
		}
	} else {
		sec.allowed = c.defaultRaftPrincipals(server, interSpec)
	}
	verify := verifyRaftPeer(sec.allowed)
	server.VerifyConnection = verify
	sec.server = server
	sec.client = func(host string) (*tls.Config, error) {
		tc, err := auth.ClientTLSConfig(st, host)
		if err != nil {
			return nil, err
		}
		tc.VerifyConnection = verify
		return tc, nil
	}
	return sec, nil
}

// parseRaftPrincipals parses petrel.raft.allowed.principals: principals in User:<name>
// form, semicolon-separated (a distinguished name holds commas), blanks ignored.
func parseRaftPrincipals(v string) ([]string, error) {
	out := auth.ParseSuperUsers(v)
	for _, p := range out {
		if name, ok := strings.CutPrefix(p, "User:"); !ok || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("%w: %s entry %q is not a principal in User:<name> form (User:CN=broker0,O=Example)",
				config.ErrInvalidBrokerConfig, config.RaftAllowedPrincipalsProperty, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s lists no principal", config.ErrInvalidBrokerConfig, config.RaftAllowedPrincipalsProperty)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// defaultRaftPrincipals are the principals allowed when the property is unset: the
// node's inter-broker principals (its certificate's, which it presents on the Raft
// transport and on a TLS inter-broker listener, and the SASL username of a SASL
// inter-broker listener) and super.users.
func (c *Config) defaultRaftPrincipals(server *tls.Config, inter config.ListenerSpec) []string {
	var out []string
	if len(server.Certificates) > 0 && server.Certificates[0].Leaf != nil {
		out = append(out, auth.CertificatePrincipal(server.Certificates[0].Leaf))
	}
	if inter.SASL() {
		if _, user, _, err := c.interBrokerCredentials(inter.Name); err == nil {
			out = append(out, "User:"+user)
		}
	}
	users, _ := c.brokerValue("super.users")
	out = append(out, auth.ParseSuperUsers(users)...)
	slices.Sort(out)
	return slices.Compact(out)
}

// verifyRaftPeer is the check both ends of a Raft connection run after the chain
// verification: the other's certificate carries an allowed principal, as an SSL
// listener names it (auth.CertificatePrincipal).
func verifyRaftPeer(allowed []string) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return fmt.Errorf("%w: no certificate", errRaftPeerNotAllowed)
		}
		p := auth.CertificatePrincipal(cs.PeerCertificates[0])
		if _, ok := slices.BinarySearch(allowed, p); !ok {
			return fmt.Errorf("%w: %s", errRaftPeerNotAllowed, p)
		}
		return nil
	}
}
