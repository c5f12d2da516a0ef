package rpc

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request is one decoded request, handed to a Handler on the connection's reader
// goroutine.
type Request struct {
	// Key is the api key, for example 0 for Produce.
	Key int16
	// Version is the api version; Body has it set too.
	Version int16
	// CorrelationID is echoed in the response header by the server.
	CorrelationID int32
	// ClientID is the header's client_id: nullable, always int16-length encoded.
	ClientID *string
	// Body is the decoded request with its Version set. Its strings are copies; its
	// []byte fields (Produce Records, for example) alias the request frame, which is
	// owned by this request alone. The frame is reused once the handler returns only
	// for an api registered with Registry.ReleaseFrameAfterHandler (bodies without
	// []byte fields are released too: nothing aliases them); otherwise the []byte
	// fields stay valid for as long as the handler keeps them (framepool.go).
	Body kmsg.Request
	// Conn describes the connection the request arrived on.
	Conn *ConnInfo
	// conn is the connection that read it (nil in tests that build a Request): Defer.
	conn *conn
}

// ConnInfo describes one client connection. A ConnInfo is never modified once a request
// carries it: when an ApiVersions v3+ request names the client software, later requests
// get a fresh ConnInfo, so handlers may keep and read it from any goroutine.
type ConnInfo struct {
	// ID is unique per Server, counting from 1 in accept order.
	ID uint64
	// RemoteAddr is the client's address.
	RemoteAddr net.Addr
	// LocalAddr is the listener-side address.
	LocalAddr net.Addr
	// ClientSoftwareName is from the last ApiVersions v3+ request, "" before one.
	ClientSoftwareName string
	// ClientSoftwareVersion is from the last ApiVersions v3+ request, "" before one.
	ClientSoftwareVersion string
	// Principal is the authenticated Kafka principal in Kafka's "Type:Name" form,
	// AnonymousPrincipal until TLS client authentication or SASL names one.
	Principal string
	// ListenerName is the name of the listener the connection arrived on (PLAINTEXT
	// for the --listen shorthand).
	ListenerName string
}

// AnonymousPrincipal is Kafka's principal for an unauthenticated connection.
const AnonymousPrincipal = "User:ANONYMOUS"

// Handler handles one request. Handlers run on the connection's reader goroutine, one
// at a time in request order, so side effects (appends) keep the client's order;
// anything that must wait returns RespondLater. ctx is cancelled when the connection
// closes, which includes Server.Close and the end of Server.Shutdown.
//
// A Handler must not call Server.Close or Server.Shutdown itself (they wait for the
// reader goroutine it runs on). A panicking handler is logged at Error and its
// connection closed.
type Handler func(ctx context.Context, req *Request) Result

// resultKind says what the connection does with a Result.
type resultKind uint8

const (
	resultInvalid resultKind = iota // the zero Result: a programming error
	resultRespond
	resultLater
	resultNone
	resultClose
)

// Result is what a Handler returns; build it with Respond, RespondLater, NoResponse or
// CloseConnection. The zero Result is invalid and closes the connection.
type Result struct {
	kind  resultKind
	resp  kmsg.Response        // resultRespond
	later <-chan kmsg.Response // resultLater
	// deferred is resultLater's Deferred (RespondDeferred), when later is nil.
	deferred *Deferred
	err      error // resultClose
	// closeAfter closes the connection after a resultLater answer (authn.go).
	closeAfter error
	// finish runs on the response before it is written (OnResponse).
	finish func(kmsg.Response) time.Duration
}

// OnResponse has f run on the response (immediate or later) just before it is
// written, on the connection's writer goroutine. f may change the response; the
// duration it returns is Kafka's client quota throttle (KIP-219): a positive one is
// written as the response's throttle_time_ms and the connection is muted — no further
// request is read — until it has passed. Several OnResponse calls run in order and the
// longest throttle wins. It has no effect on NoResponse or CloseConnection.
func (r Result) OnResponse(f func(kmsg.Response) time.Duration) Result {
	if f == nil {
		return r
	}
	if prev := r.finish; prev != nil {
		r.finish = func(resp kmsg.Response) time.Duration { return max(prev(resp), f(resp)) }
	} else {
		r.finish = f
	}
	return r
}

// Respond writes resp once every earlier response on the connection is written. The
// response then belongs to rpc: its version is forced to the request's and its throttle
// to 0 (or what OnResponse asks for). A nil resp closes the connection.
func Respond(resp kmsg.Response) Result {
	if resp == nil {
		return Result{kind: resultClose, err: fmt.Errorf("%w: Respond(nil)", ErrBadResult)}
	}
	return Result{kind: resultRespond, resp: resp}
}

// RespondLater queues a response that arrives later on ch (a delayed produce, a
// long-poll fetch). Responses after it wait for it, so the handler must always deliver
// one value or close ch; a channel closed without a value (or a nil value) closes the
// connection. A buffered channel of capacity 1 keeps the sender from blocking on a
// connection that has gone away. A nil ch closes the connection.
func RespondLater(ch <-chan kmsg.Response) Result {
	if ch == nil {
		return Result{kind: resultClose, err: fmt.Errorf("%w: RespondLater(nil)", ErrBadResult)}
	}
	return Result{kind: resultLater, later: ch}
}

// NoResponse writes nothing for this request (Produce with acks=0); the other
// responses keep their order.
func NoResponse() Result {
	return Result{kind: resultNone}
}

// CloseConnection stops reading, writes the responses owed for earlier requests, then
// closes the connection and logs reason at Warn. It is Kafka's answer to failures it
// cannot report in a response, such as a failed acks=0 produce.
func CloseConnection(reason error) Result {
	if reason == nil {
		reason = ErrClosedByHandler
	} else {
		reason = fmt.Errorf("%w: %w", ErrClosedByHandler, reason)
	}
	return Result{kind: resultClose, err: reason}
}
