package broker

// SaslHandshake (key 17), advertised v0-1 (librdkafka needs v0 in the range to see
// SASL support at all) and served v1: the SASL exchange is framed as SaslAuthenticate.
// A v0 handshake, which announces unframed tokens, is answered ILLEGAL_SASL_STATE and
// the connection closed.
//
// On a SASL listener the connection itself answers it (rpc/authn.go): the enabled
// mechanisms, UNSUPPORTED_SASL_MECHANISM and a close for any other. This handler only
// sees the request on a listener without SASL, where Kafka answers ILLEGAL_SASL_STATE.

import (
	"context"

	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.SASLHandshake, 0, 1, (*Broker).handleSASLHandshake, apiOpts{
		authorize: authorizeNothing,
	})
}

func (b *Broker) handleSASLHandshake(_ context.Context, req *rpc.Request) rpc.Result {
	resp := req.Body.(*kmsg.SASLHandshakeRequest).ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	return rpc.Respond(resp)
}
