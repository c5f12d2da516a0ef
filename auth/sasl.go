package auth

import (
	"bytes"
	"crypto/subtle"
	"fmt"
	"slices"
	"strings"
)

// SASL mechanism names as Kafka spells them.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// SupportedMechanisms are the mechanisms Petrel implements, in Kafka's order.
var SupportedMechanisms = []string{MechanismPlain, MechanismScramSHA256, MechanismScramSHA512}

// ParseMechanisms parses sasl.enabled.mechanisms (a comma-separated list) and refuses a
// mechanism Petrel does not implement. Kafka's names are case-sensitive.
func ParseMechanisms(list string) ([]string, error) {
	var out []string
	for _, m := range strings.Split(list, ",") {
		m = strings.TrimSpace(m)
		if m == "" {
			continue
		}
		if !slices.Contains(SupportedMechanisms, m) {
			return nil, fmt.Errorf("%w: %s (supported: %s)", ErrUnsupportedMechanism, m, strings.Join(SupportedMechanisms, ", "))
		}
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out, nil
}

// ServerSession is the server side of one SASL exchange. It is used by one goroutine.
type ServerSession interface {
	// Step takes the client's next message and returns the server's answer; done is
	// true once the client is authenticated. An error (wrapping
	// ErrAuthenticationFailed or ErrMalformedMessage) ends the exchange.
	Step(msg []byte) (challenge []byte, done bool, err error)
	// Username is the authenticated user once Step reported done.
	Username() string
}

// PlainMessage is a decoded SASL/PLAIN message (RFC 4616).
type PlainMessage struct {
	AuthorizationID string
	Username        string
	Password        string
}

// maxPlainField bounds each field of a PLAIN message (RFC 4616: 255 UTF-8 characters).
const maxPlainField = 1024

// ParsePlain decodes `[authzid] NUL authcid NUL passwd`. As in Kafka, the username and
// password must be non-empty and an authorization id other than the username is
// refused.
func ParsePlain(msg []byte) (PlainMessage, error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return PlainMessage{}, fmt.Errorf("%w: PLAIN message has %d NUL-separated fields, want 3", ErrMalformedMessage, len(parts))
	}
	for _, p := range parts {
		if len(p) > maxPlainField {
			return PlainMessage{}, fmt.Errorf("%w: PLAIN field longer than %d bytes", ErrMalformedMessage, maxPlainField)
		}
	}
	m := PlainMessage{AuthorizationID: string(parts[0]), Username: string(parts[1]), Password: string(parts[2])}
	if m.Username == "" {
		return PlainMessage{}, fmt.Errorf("%w: PLAIN username is empty", ErrMalformedMessage)
	}
	if m.Password == "" {
		return PlainMessage{}, fmt.Errorf("%w: PLAIN password is empty", ErrMalformedMessage)
	}
	if m.AuthorizationID != "" && m.AuthorizationID != m.Username {
		return PlainMessage{}, fmt.Errorf("%w: authorization id %q differs from the username", ErrAuthenticationFailed, m.AuthorizationID)
	}
	return m, nil
}

// EncodePlain is the client's PLAIN message.
func EncodePlain(username, password string) []byte {
	return []byte("\x00" + username + "\x00" + password)
}

// PlainServer checks PLAIN messages against a user → password table.
type PlainServer struct {
	lookup   func(user string) (password string, ok bool)
	username string
	done     bool
}

// NewPlainServer starts a PLAIN exchange checking passwords with lookup.
func NewPlainServer(lookup func(user string) (string, bool)) *PlainServer {
	return &PlainServer{lookup: lookup}
}

// Step implements ServerSession: PLAIN is a single client message with an empty answer.
func (s *PlainServer) Step(msg []byte) ([]byte, bool, error) {
	if s.done {
		return nil, false, fmt.Errorf("%w: PLAIN exchange already complete", ErrMalformedMessage)
	}
	m, err := ParsePlain(msg)
	if err != nil {
		return nil, false, err
	}
	want, ok := s.lookup(m.Username)
	// Compare even for an unknown user so that timing does not tell them apart.
	match := subtle.ConstantTimeCompare([]byte(want), []byte(m.Password)) == 1
	if !ok || !match {
		return nil, false, fmt.Errorf("%w: invalid username or password", ErrAuthenticationFailed)
	}
	s.username, s.done = m.Username, true
	return []byte{}, true, nil
}

// Username implements ServerSession.
func (s *PlainServer) Username() string { return s.username }
