package auth

import "errors"

// Sentinel errors of the auth package; broker/errors.go maps them to Kafka codes.
var (
	// ErrAuthenticationFailed means the client's credentials were refused (unknown
	// user, wrong password, bad proof): Kafka's SASL_AUTHENTICATION_FAILED.
	ErrAuthenticationFailed = errors.New("auth: authentication failed")
	// ErrUnsupportedMechanism means a SASL mechanism is not enabled on the listener.
	ErrUnsupportedMechanism = errors.New("auth: unsupported SASL mechanism")
	// ErrMalformedMessage means a SASL message could not be parsed.
	ErrMalformedMessage = errors.New("auth: malformed SASL message")
	// ErrInvalidJAAS means a JAAS configuration string could not be parsed.
	ErrInvalidJAAS = errors.New("auth: invalid JAAS configuration")
	// ErrInvalidTLSConfig means the ssl.* properties do not make a TLS configuration.
	ErrInvalidTLSConfig = errors.New("auth: invalid TLS configuration")
	// ErrInvalidCredential means a SCRAM credential's parameters are out of range.
	ErrInvalidCredential = errors.New("auth: invalid SCRAM credential")
)

// ErrInvalidACL is an ACL or ACL filter that cannot be stored or compared (Kafka's
// INVALID_REQUEST).
var ErrInvalidACL = errors.New("auth: invalid ACL")

// ErrInvalidQuota is a client quota entity or value Kafka refuses (INVALID_REQUEST).
var ErrInvalidQuota = errors.New("auth: invalid client quota")
