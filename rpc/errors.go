package rpc

import "errors"

// Connection-closing reasons on the server side. Each is wrapped with detail (sizes, key,
// version) and logged when the connection closes; none of them is sent to the client,
// because Kafka closes the connection for requests it cannot answer.
var (
	// ErrFrameSize means a request size prefix was negative, below the minimal request
	// header, or above ServerConfig.MaxRequestBytes.
	ErrFrameSize = errors.New("rpc: request size out of range")
	// ErrMalformedHeader means the request header (key, version, correlation id,
	// client id, and the tag buffer of flexible requests) could not be read.
	ErrMalformedHeader = errors.New("rpc: malformed request header")
	// ErrUnknownKey means the api key is unknown to kmsg or not registered.
	ErrUnknownKey = errors.New("rpc: unknown or unserved api key")
	// ErrUnsupportedVersion means the api version is outside the registered range.
	ErrUnsupportedVersion = errors.New("rpc: unsupported api version")
	// ErrMalformedRequest means the request body failed to decode.
	ErrMalformedRequest = errors.New("rpc: malformed request body")
	// ErrTruncatedFrame means the connection ended in the middle of a request.
	ErrTruncatedFrame = errors.New("rpc: connection ended inside a request")
	// ErrIdleTimeout means nothing was read or owed for ServerConfig.IdleTimeout, or a
	// request stalled half-read for that long.
	ErrIdleTimeout = errors.New("rpc: connection idle")
	// ErrClosedByHandler wraps the reason given to CloseConnection.
	ErrClosedByHandler = errors.New("rpc: connection closed by handler")
	// ErrResponseAbandoned means a RespondLater channel was closed without a value (or
	// delivered a nil response).
	ErrResponseAbandoned = errors.New("rpc: delayed response abandoned")
	// ErrBadResult means a handler returned a zero Result, or a nil response or channel
	// (a programming error).
	ErrBadResult = errors.New("rpc: handler returned an invalid result")
	// ErrResponseKey means a handler answered with a response of another api key (a
	// programming error).
	ErrResponseKey = errors.New("rpc: response key does not match the request")
	// ErrShortSection means a response's file section ended before its size: the file
	// was truncated while the response was sent. The frame cannot be completed, so the
	// connection closes (Kafka closes it too).
	ErrShortSection = errors.New("rpc: file section shorter than announced")
	// ErrHandlerPanic means a handler panicked; the panic is logged with its stack.
	ErrHandlerPanic = errors.New("rpc: handler panicked")
	// ErrUnauthenticated means a request other than ApiVersions, SaslHandshake and
	// SaslAuthenticate arrived on a SASL listener before authentication, or after the
	// session expired (KIP-368).
	ErrUnauthenticated = errors.New("rpc: request before authentication")
	// ErrAuthenticationFailed means a SASL exchange failed; the failure was answered
	// (SASL_AUTHENTICATION_FAILED or UNSUPPORTED_SASL_MECHANISM) before the close.
	ErrAuthenticationFailed = errors.New("rpc: authentication failed")
	// ErrTLSHandshake means the TLS handshake of a connection failed.
	ErrTLSHandshake = errors.New("rpc: TLS handshake failed")
	// ErrServerClosed means the server closed the connection on Close or at the end of
	// Shutdown.
	ErrServerClosed = errors.New("rpc: server closed")
)

// Client errors.
var (
	// ErrClientClosed is returned by Do after Close, and to calls still waiting then.
	ErrClientClosed = errors.New("rpc: client closed")
	// ErrCorrelationMismatch means a response arrived out of order or unasked; the
	// client's connection is closed.
	ErrCorrelationMismatch = errors.New("rpc: response correlation id mismatch")
	// ErrMalformedResponse means a response frame or body could not be decoded.
	ErrMalformedResponse = errors.New("rpc: malformed response")
	// ErrNoResponseExpected is returned by Do for requests that Kafka never answers
	// (Produce with acks=0).
	ErrNoResponseExpected = errors.New("rpc: request gets no response")
)

// Internal reader outcomes, never logged as failures.
var (
	// errStopped: Shutdown asked the reader to stop at a frame boundary.
	errStopped = errors.New("rpc: reading stopped for shutdown")
	// errHandedToWriter: the reader queued a close for the writer and exited.
	errHandedToWriter = errors.New("rpc: close handed to writer")
	// errDrained: the writer wrote every owed response after the reader stopped.
	errDrained = errors.New("rpc: connection drained")
)
