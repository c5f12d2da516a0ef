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
	// SASLMaxReceiveSize caps a request frame on a SASL listener until the connection's
	// first authentication completes (Kafka's sasl.server.max.receive.size): a larger
	// size prefix closes the connection before any of the body is read. Zero means
	// DefaultSASLMaxReceiveSize. Afterwards ServerConfig.MaxRequestBytes applies.
	SASLMaxReceiveSize int32
	// Limiter, when set, admits every connection the listener accepts before anything
	// is read from it (Kafka's connection quotas).
	Limiter ConnectionLimiter
}

// DefaultSASLMaxReceiveSize is Kafka's sasl.server.max.receive.size (512 KiB).
const DefaultSASLMaxReceiveSize int32 = 524288

// ConnectionLimiter decides which accepted connections a listener serves (Kafka's
// max.connections, max.connections.per.ip). It must be safe for concurrent use; the
// Server holds no lock while calling it.
type ConnectionLimiter interface {
	// Admit is called on the listener's accept goroutine for each accepted connection,
	// before anything is read from it. It may block, holding back further accepts
	// (Kafka's back-pressure at max.connections), until stop is closed (Shutdown or
	// Close). false closes the connection at once.
	Admit(listener string, remote net.Addr, stop <-chan struct{}) bool
	// Release is called once, from any goroutine, when a connection Admit admitted
	// closes.
	Release(listener string, remote net.Addr)
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
