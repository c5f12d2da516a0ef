package rpc

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The SASL apis, answered by the connection itself on a SASL listener.
const (
	saslHandshakeKey    int16 = 17
	saslAuthenticateKey int16 = 36
)

// connSecurity is a connection's authentication state, owned by the reader goroutine.
//
// On a SASL listener a connection goes: nothing → SaslHandshake names an enabled
// mechanism (session set) → SaslAuthenticate rounds until the mechanism is done
// (authenticated, principal set) → requests are served until the session expires.
// Before authentication only ApiVersions, SaslHandshake and SaslAuthenticate are
// served; anything else closes the connection. A new SaslHandshake after
// authentication starts a re-authentication (KIP-368), which must name the same
// principal.
type connSecurity struct {
	lc *ListenerConfig
	// session is the exchange in progress, nil outside one.
	session SASLSession
	// mechanism is the mechanism of the exchange in progress.
	mechanism string
	// authenticated is set once a SASL exchange succeeded.
	authenticated bool
	// expires is when the SASL session ends (zero: never).
	expires time.Time
}

// setListener records the listener the connection arrived on.
func (c *conn) setListener(lc *ListenerConfig) {
	c.security.lc = lc
	c.info.ListenerName = lc.Name
	if lc.TLS != nil {
		c.nc = tls.Server(c.nc, lc.TLS)
	}
}

// handshakeTLS runs the TLS handshake of a TLS listener, bounded by the idle timeout,
// and takes the principal of a verified client certificate on a listener without SASL.
func (c *conn) handshakeTLS() error {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.srv.cfg.IdleTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrTLSHandshake, err)
	}
	st := tc.ConnectionState()
	lc := c.security.lc
	if lc.SASL == nil && lc.CertificatePrincipal != nil && len(st.VerifiedChains) > 0 && len(st.PeerCertificates) > 0 {
		info := *c.info
		info.Principal = lc.CertificatePrincipal(st.PeerCertificates[0])
		c.info = &info
		c.log.Debug("TLS client authenticated", "principal", info.Principal)
	}
	return nil
}

// preAuth reports whether the connection is on a SASL listener and has not yet
// completed its first authentication.
func (sec *connSecurity) preAuth() bool {
	return sec.lc != nil && sec.lc.SASL != nil && !sec.authenticated
}

// maxRequestBytes is the largest request frame the connection may read now:
// sasl.server.max.receive.size on a SASL listener before the first authentication
// completes (preAuth true), socket.request.max.bytes otherwise.
func (c *conn) maxRequestBytes() (limit int32, preAuth bool) {
	limit = c.srv.cfg.MaxRequestBytes
	if !c.security.preAuth() {
		return limit, false
	}
	saslMax := c.security.lc.SASLMaxReceiveSize
	if saslMax <= 0 {
		saslMax = DefaultSASLMaxReceiveSize
	}
	return min(limit, saslMax), true
}

// checkPreAuthKey refuses, from the api key alone and before its body is decoded, a
// request other than ApiVersions, SaslHandshake and SaslAuthenticate on a SASL listener
// before authentication (Kafka's SaslServerAuthenticator does the same): an
// unauthenticated client cannot make the broker decode any other api's body. frame
// holds at least a request header's first bytes (readFrame).
func (c *conn) checkPreAuthKey(frame []byte) error {
	if !c.security.preAuth() {
		return nil
	}
	switch key := int16(binary.BigEndian.Uint16(frame)); key {
	case apiVersionsKey, saslHandshakeKey, saslAuthenticateKey:
		return nil
	default:
		return fmt.Errorf("%w: %s (key %d)", ErrUnauthenticated, kmsg.NameForKey(key), key)
	}
}

// authenticate applies the SASL rules to req. gated false means dispatch req as
// usual; gated true with a zero Result means close the connection (a request before
// authentication or after the session expired); otherwise the Result is the answer.
func (c *conn) authenticate(req *Request) (res Result, gated bool) {
	sec := &c.security
	if sec.lc == nil || sec.lc.SASL == nil {
		return Result{}, false
	}
	switch req.Key {
	case apiVersionsKey:
		return Result{}, false
	case saslHandshakeKey:
		return c.saslHandshake(req.Body.(*kmsg.SASLHandshakeRequest)), true
	case saslAuthenticateKey:
		return c.saslAuthenticate(req.Body.(*kmsg.SASLAuthenticateRequest)), true
	}
	if !sec.authenticated {
		return Result{}, true
	}
	if !sec.expires.IsZero() && time.Now().After(sec.expires) {
		c.log.Info("SASL session expired without re-authentication", "principal", c.info.Principal)
		return Result{}, true
	}
	return Result{}, false
}

// saslHandshake answers SaslHandshake: the enabled mechanisms, and the start of an
// exchange when the client's is one of them.
func (c *conn) saslHandshake(body *kmsg.SASLHandshakeRequest) Result {
	sec := &c.security
	resp := body.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = sec.lc.SASL.Mechanisms()
	if body.Version < 1 {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return c.failAuth(resp, fmt.Errorf("%w: SaslHandshake v0 (unframed tokens) is not supported", ErrAuthenticationFailed))
	}
	if sec.session != nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return c.failAuth(resp, fmt.Errorf("%w: SaslHandshake during an exchange", ErrAuthenticationFailed))
	}
	if !slices.Contains(resp.SupportedMechanisms, body.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return c.failAuth(resp, fmt.Errorf("%w: mechanism %q is not enabled", ErrAuthenticationFailed, body.Mechanism))
	}
	sess, err := sec.lc.SASL.NewSession(body.Mechanism, c.info)
	if err != nil {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return c.failAuth(resp, fmt.Errorf("%w: %w", ErrAuthenticationFailed, err))
	}
	sec.session, sec.mechanism = sess, body.Mechanism
	return Respond(resp)
}

// saslAuthenticate runs one round of the exchange.
func (c *conn) saslAuthenticate(body *kmsg.SASLAuthenticateRequest) Result {
	sec := &c.security
	resp := body.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	if sec.session == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate without a SaslHandshake"
		resp.ErrorMessage = &msg
		return c.failAuth(resp, fmt.Errorf("%w: %s", ErrAuthenticationFailed, msg))
	}
	challenge, done, err := sec.session.Step(body.SASLAuthBytes)
	if err != nil {
		sec.session = nil
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := fmt.Sprintf("Authentication failed during authentication due to invalid credentials with SASL mechanism %s", sec.mechanism)
		resp.ErrorMessage = &msg
		return c.failAuth(resp, fmt.Errorf("%w: %s: %w", ErrAuthenticationFailed, sec.mechanism, err))
	}
	resp.SASLAuthBytes = challenge
	if !done {
		return Respond(resp)
	}
	principal := "User:" + sec.session.Username()
	sec.session = nil
	if sec.authenticated && principal != c.info.Principal {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := "Cannot change principals during re-authentication"
		resp.ErrorMessage = &msg
		return c.failAuth(resp, fmt.Errorf("%w: re-authentication as %s, was %s", ErrAuthenticationFailed, principal, c.info.Principal))
	}
	sec.authenticated = true
	if max := sec.lc.MaxReauth; max > 0 {
		sec.expires = time.Now().Add(max)
		resp.SessionLifetimeMillis = max.Milliseconds()
	}
	if principal != c.info.Principal {
		info := *c.info
		info.Principal = principal
		c.info = &info
	}
	c.log.Debug("SASL authenticated", "mechanism", sec.mechanism, "principal", principal)
	return Respond(resp)
}

// failAuth answers resp after the listener's failure delay, then closes the
// connection for reason.
func (c *conn) failAuth(resp kmsg.Response, reason error) Result {
	var delay time.Duration
	if f := c.security.lc.FailureDelay; f != nil {
		delay = f(c.info.RemoteAddr)
	}
	ch := make(chan kmsg.Response, 1)
	if delay <= 0 {
		ch <- resp
	} else {
		time.AfterFunc(delay, func() { ch <- resp })
	}
	return Result{kind: resultLater, later: ch, closeAfter: reason}
}
