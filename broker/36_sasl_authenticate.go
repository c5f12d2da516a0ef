package broker

// SaslAuthenticate (key 36), v0-2. v1 adds session_lifetime_ms (KIP-368,
// connections.max.reauth.ms).
//
// On a SASL listener the connection itself runs the exchange (rpc/authn.go); a failed
// one is answered with SASL_AUTHENTICATION_FAILED after
// connection.failed.authentication.delay.ms and the connection closed. This handler
// only sees the request on a listener without SASL: ILLEGAL_SASL_STATE.

import (
	"context"

	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.SASLAuthenticate, 0, 2, (*Broker).handleSASLAuthenticate, apiOpts{
		authorize: authorizeNothing,
	})
}

func (b *Broker) handleSASLAuthenticate(_ context.Context, req *rpc.Request) rpc.Result {
	resp := req.Body.(*kmsg.SASLAuthenticateRequest).ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	msg := "SASL is not enabled on listener " + req.Conn.ListenerName
	resp.ErrorMessage = &msg
	return rpc.Respond(resp)
}
