package broker

import (
	"context"
	"net"
	"strconv"

	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handlerFunc handles one Kafka API on a broker.
type handlerFunc func(b *Broker, ctx context.Context, req *rpc.Request) rpc.Result

// apiSpec is one served API: key, the advertised version range, the handler.
type apiSpec struct {
	key      kmsg.Key
	min, max int16
	handle   handlerFunc
	internal bool
}

// apis is filled by each handler file's init (one file per API, named by key).
var apis []apiSpec

// frameReleasingAPIs are the APIs whose handlers keep no []byte of the request body
// once they return, so that rpc reuses their request frames (rpc/framepool.go, the
// ownership rule). A handler file adds its key with releasesRequestFrame.
var frameReleasingAPIs []kmsg.Key

// releasesRequestFrame declares that key's handler copies whatever it keeps of its
// request's []byte fields.
func releasesRequestFrame(key kmsg.Key) { frameReleasingAPIs = append(frameReleasingAPIs, key) }

func registerAPI(key kmsg.Key, min, max int16, h handlerFunc) {
	apis = append(apis, apiSpec{key, min, max, h, false})
}

// registerInternalAPI registers an API that brokers send each other: served, never
// advertised in ApiVersions.
func registerInternalAPI(key kmsg.Key, min, max int16, h handlerFunc) {
	apis = append(apis, apiSpec{key, min, max, h, true})
}

// newRegistry builds the rpc registry; it alone generates ApiVersions, so the broker
// advertises exactly what it serves. Client APIs wait for start-up readiness
// (readiness.go); internal APIs never do.
func (b *Broker) newRegistry() *rpc.Registry {
	reg := rpc.NewRegistry()
	for _, a := range apis {
		h := a.handle
		var handler rpc.Handler = func(ctx context.Context, req *rpc.Request) rpc.Result { return h(b, ctx, req) }
		handler = b.withAuthorization(handler) // authorize.go
		if a.internal {
			reg.RegisterInternal(int16(a.key), a.min, a.max, handler)
		} else {
			reg.Register(int16(a.key), a.min, a.max, b.untilReady(a.key, b.withQuotas(a.key, handler)))
		}
	}
	for _, key := range frameReleasingAPIs {
		reg.ReleaseFrameAfterHandler(int16(key))
	}
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
