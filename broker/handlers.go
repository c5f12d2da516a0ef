package broker

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handlerFunc handles one Kafka API on a broker.
type handlerFunc func(b *Broker, ctx context.Context, req *rpc.Request) rpc.Result

// apiSpec is one served API: key, the advertised version range, the handler, and its
// facts (apiOpts).
type apiSpec struct {
	key      kmsg.Key
	min, max int16
	handle   handlerFunc
	internal bool
	apiOpts
}

// apiOpts are an API's facts besides its handler, set beside it in its file's init: the
// authorization wrapper, the readiness wait and the controller routing read them here,
// so that adding an API edits its own file alone.
type apiOpts struct {
	// authorize is the API's authorization rule (authorize_apis.go): required, so that
	// no API is served unguarded (registering one without a rule panics).
	authorize authzRule
	// partitionScoped marks an API answered per partition from the local replicas
	// alone: a request still waiting for readiness at its timeout is answered, every
	// partition NOT_LEADER_OR_FOLLOWER, rather than its connection closed (readiness.go).
	partitionScoped bool
	// controller marks a controller API: it handles the request on this node's
	// controller, in process (controllerLocal); other brokers forward it there
	// (respondFromController).
	controller func(b *Broker, ctx context.Context, req kmsg.Request) kmsg.Response
	// fillError answers every resource of req in resp with code, and with cause's text
	// as the message where the response has one (nil cause: none): the one way a whole
	// request is answered with one error, whether NOT_CONTROLLER or why no controller
	// answered (notControllerResponse), a whole-request authorization denial
	// (authzChecks.denyAll) or a handler's own refusal of the whole request. Required
	// of controller APIs.
	fillError func(req kmsg.Request, resp kmsg.Response, code int16, cause error)
	// isNotController reads an answer as one from a node that is no controller, which a
	// forward sends again (forwarding.go); nil: no answer counts as such.
	isNotController func(resp kmsg.Response) bool
	// offeredToOperatorCLI advertises an internal API to Petrel's own CLI
	// (OperatorCLISoftwareName) and to no other client (rpc.Registry.OfferInternal).
	offeredToOperatorCLI bool
	// adminChange: the controller answers only once every live broker has applied the
	// change (admin_visibility.go).
	adminChange bool
	// ownTimeout: a forward waits for a controller as long as the request's own timeout
	// (kmsg.TimeoutRequest) rather than forwardDefaultTimeout.
	ownTimeout bool
	// sessionConn: sent to a remote controller on the broker-session connection, so that
	// a broker's session never waits behind its other controller requests.
	sessionConn bool
}

// apis is filled by each handler file's init (one file per API, named by key), in
// registration order; apiByKey indexes it.
var (
	apis     []*apiSpec
	apiByKey = map[kmsg.Key]*apiSpec{}
)

// apiFor is the spec of the API with that key, or nil for one not served.
func apiFor(key int16) *apiSpec { return apiByKey[kmsg.Key(key)] }

// frameReleasingAPIs are the APIs whose handlers keep no []byte of the request body
// once they return, so that rpc reuses their request frames (rpc/framepool.go, the
// ownership rule). A handler file adds its key with releasesRequestFrame.
var frameReleasingAPIs []kmsg.Key

// releasesRequestFrame declares that key's handler copies whatever it keeps of its
// request's []byte fields.
func releasesRequestFrame(key kmsg.Key) { frameReleasingAPIs = append(frameReleasingAPIs, key) }

// registerAPI registers a client API with its facts.
func registerAPI(key kmsg.Key, min, max int16, h handlerFunc, opts apiOpts) {
	addAPI(&apiSpec{key, min, max, h, false, opts})
}

// registerInternalAPI registers an API that brokers send each other: served, never
// advertised in ApiVersions.
func registerInternalAPI(key kmsg.Key, min, max int16, h handlerFunc, opts apiOpts) {
	addAPI(&apiSpec{key, min, max, h, true, opts})
}

func addAPI(a *apiSpec) {
	switch {
	case a.authorize == nil:
		panic(fmt.Sprintf("broker: %s is registered without an authorization rule", a.key.Name()))
	case a.controller != nil && a.fillError == nil:
		panic(fmt.Sprintf("broker: controller API %s is registered without its NOT_CONTROLLER answer (fillError)", a.key.Name()))
	case apiByKey[a.key] != nil:
		panic(fmt.Sprintf("broker: %s is registered twice", a.key.Name()))
	}
	apis = append(apis, a)
	apiByKey[a.key] = a
}

// errorResponse answers req with code on every resource, as its API fills a
// whole-request error (apiOpts.fillError); cause is the message (nil: none).
func errorResponse(req kmsg.Request, code int16, cause error) kmsg.Response {
	resp := req.ResponseKind()
	if a := apiFor(req.Key()); a != nil && a.fillError != nil {
		a.fillError(req, resp, code, cause)
	}
	return resp
}

// onController adapts a controller-side method to apiOpts.controller.
func onController[Req kmsg.Request, Resp kmsg.Response](f func(*Broker, context.Context, Req) Resp) func(*Broker, context.Context, kmsg.Request) kmsg.Response {
	return func(b *Broker, ctx context.Context, req kmsg.Request) kmsg.Response { return f(b, ctx, req.(Req)) }
}

// newRegistry builds the rpc registry; it alone generates ApiVersions, so the broker
// advertises exactly what it serves. Client APIs wait for start-up readiness
// (readiness.go); internal APIs never do.
func (b *Broker) newRegistry() *rpc.Registry {
	reg := rpc.NewRegistry()
	for _, a := range apis {
		if b.apiDisabled(a.key) { // group_protocols.go
			reg.RegisterInternal(int16(a.key), a.min, a.max, answerUnsupported)
			continue
		}
		h := a.handle
		var handler rpc.Handler = func(ctx context.Context, req *rpc.Request) rpc.Result { return h(b, ctx, req) }
		handler = b.withAuthorization(handler) // authorize.go
		if a.internal {
			reg.RegisterInternal(int16(a.key), a.min, a.max, handler)
			if a.offeredToOperatorCLI {
				reg.OfferInternal(int16(a.key), OperatorCLISoftwareName)
			}
		} else {
			reg.Register(int16(a.key), a.min, a.max, b.untilReady(a.key, b.withQuotas(a.key, handler)))
		}
	}
	for _, key := range frameReleasingAPIs {
		reg.ReleaseFrameAfterHandler(int16(key))
	}
	reg.SetFeatures(b.addApiVersionsFeatures) // feature_levels.go
	return reg
}

func splitHostPort(addr string) (string, int32) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, 0
	}
	port, _ := strconv.Atoi(portStr)
	return host, int32(port)
}
