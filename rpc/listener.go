package rpc

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"time"
)

// ListenerConfig is the security of one listener: Kafka's security protocol is TLS
// (SSL), SASL (SASL_PLAINTEXT), both (SASL_SSL) or neither (PLAINTEXT).
type ListenerConfig struct {
	// Name is the listener name put on every ConnInfo (PLAINTEXT, SASL_SSL, INTERNAL...).
	Name string
	// TLS, when set, makes every connection start with a TLS handshake; a client that
	// fails it (plaintext bytes, an untrusted or expired certificate) is closed before
	// any request is read.
	TLS *tls.Config
	// CertificatePrincipal names the principal of a verified client certificate on a
	// listener without SASL (ssl.client.auth requested or required); nil leaves such
	// connections User:ANONYMOUS.
	CertificatePrincipal func(*x509.Certificate) string
	// SASL, when set, requires SASL authentication before any request other than
	// ApiVersions, SaslHandshake and SaslAuthenticate; any other request closes the
	// connection, as in Kafka.
	SASL SASLAuthenticator
	// MaxReauth is connections.max.reauth.ms (KIP-368): a SASL session lasts this long,
	// told to the client in SaslAuthenticate v1+ (session_lifetime_ms); a request after
	// it expires, without re-authentication, closes the connection. 0 means sessions do
	// not expire.
	MaxReauth time.Duration
	// FailureDelay, when set, returns how long to hold back the answer to a failed
	// authentication from remote (connection.failed.authentication.delay.ms); the
	// connection is closed after the answer.
	FailureDelay func(remote net.Addr) time.Duration
}

// SASLAuthenticator is a listener's SASL server: its enabled mechanisms and a new
// exchange per authentication. It must be safe for concurrent use.
type SASLAuthenticator interface {
	// Mechanisms are the enabled mechanisms, as SaslHandshake lists them.
	Mechanisms() []string
	// NewSession starts one exchange of an enabled mechanism for the connection info.
	NewSession(mechanism string, info *ConnInfo) (SASLSession, error)
}

// SASLSession is the server side of one SASL exchange, used by one connection's
// reader goroutine.
type SASLSession interface {
	// Step takes the client's next message and returns the answer; done means the
	// client is authenticated. An error fails the authentication.
	Step(msg []byte) (challenge []byte, done bool, err error)
	// Username is the authenticated user once Step reported done; the principal is
	// "User:" + Username.
	Username() string
}

// plaintextListener is the configuration of Serve: PLAINTEXT, named PLAINTEXT.
var plaintextListener = ListenerConfig{Name: "PLAINTEXT"}
