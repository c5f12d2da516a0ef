package rpc

import (
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersions is built into every Registry: Kafka's table row for key 18.
const (
	apiVersionsKey        int16 = 18
	apiVersionsMinVersion int16 = 0
	apiVersionsMaxVersion int16 = 4
)

// controlledShutdownKey is the one api whose v0 header lacks client_id.
const controlledShutdownKey int16 = 7

// Registry maps api keys to a version range and a Handler. It alone generates the
// ApiVersions response, so the broker never advertises what it does not serve: the
// advertised range is exactly the registered one. ApiVersions (key 18, versions 0-4) is
// built in and answered by the Server itself.
//
// A request whose version lies inside the registered range reaches the handler, even
// when the handler serves only part of it (Produce advertised from v0 but served from
// v3): the handler answers such versions itself, for example with UNSUPPORTED_VERSION
// per partition.
//
// Register every api before passing the Registry to NewServer; after that it is
// read-only and safe for concurrent use, and Register panics.
type Registry struct {
	// apis is written by Register only before the registry is frozen.
	apis map[int16]registeredAPI
	// frozen is set by NewServer.
	frozen atomic.Bool
	// features, when set, fills an ApiVersions v3+ response's supported and finalized
	// features (KIP-584); written only before the registry is frozen.
	features func(version int16, resp *kmsg.ApiVersionsResponse)
}

// registeredAPI is one row of the table.
type registeredAPI struct {
	minVersion, maxVersion int16
	handler                Handler
	internal               bool // served, not advertised
	// offeredTo is the client software name (ApiVersions v3+) to which an internal API
	// is advertised nonetheless: Petrel's own CLI, whose franz-go client sends only
	// what a broker advertised. Empty: advertised to no one.
	offeredTo string
	// releaseFrame: the request frame is pooled again once the handler returns (the
	// body holds no []byte, or ReleaseFrameAfterHandler; framepool.go).
	releaseFrame bool
}

// NewRegistry returns a Registry holding only the built-in ApiVersions.
func NewRegistry() *Registry {
	return &Registry{apis: make(map[int16]registeredAPI)}
}

// Register serves key at versions minVersion..maxVersion with h, and advertises exactly
// that range. It panics (a programming error) on a duplicate key, key 18 (built in), a
// key kmsg does not know, a bad range (negative, min > max, or max above kmsg's maximum
// for the key), ControlledShutdown v0 (its header has no client_id), a nil handler, or a
// registry already given to NewServer.
func (r *Registry) Register(key, minVersion, maxVersion int16, h Handler) {
	r.register(key, minVersion, maxVersion, h, false)
}

// RegisterInternal serves key like Register but leaves it out of ApiVersions: for the
// KRaft-style APIs brokers send each other (BrokerRegistration, BrokerHeartbeat,
// AddRaftVoter), which clients must never be offered.
func (r *Registry) RegisterInternal(key, minVersion, maxVersion int16, h Handler) {
	r.register(key, minVersion, maxVersion, h, true)
}

func (r *Registry) register(key, minVersion, maxVersion int16, h Handler, internal bool) {
	if r.frozen.Load() {
		panic(fmt.Sprintf("rpc: Register(%d) after NewServer", key))
	}
	if key == apiVersionsKey {
		panic("rpc: ApiVersions (key 18) is built in")
	}
	req := RequestForKey(key)
	if req == nil {
		panic(fmt.Sprintf("rpc: Register: api key %d is unknown to kmsg", key))
	}
	if minVersion < 0 || minVersion > maxVersion || maxVersion > req.MaxVersion() {
		panic(fmt.Sprintf("rpc: Register: bad version range %d-%d for %s (kmsg max %d)",
			minVersion, maxVersion, kmsg.NameForKey(key), req.MaxVersion()))
	}
	if key == controlledShutdownKey && minVersion == 0 {
		panic("rpc: Register: ControlledShutdown v0 has no client_id in its header and cannot be served")
	}
	if h == nil {
		panic(fmt.Sprintf("rpc: Register: nil handler for %s", kmsg.NameForKey(key)))
	}
	if _, dup := r.apis[key]; dup {
		panic(fmt.Sprintf("rpc: Register: %s (key %d) registered twice", kmsg.NameForKey(key), key))
	}
	r.apis[key] = registeredAPI{minVersion: minVersion, maxVersion: maxVersion, handler: h, internal: internal,
		releaseFrame: !bodyAliasesFrame(req)}
}

// ReleaseFrameAfterHandler declares that key's handler, whose request body holds []byte
// fields (Produce's records), keeps none of them once it returns (nor does anything it
// starts): the request frame then goes back to the frame pools at once (framepool.go,
// the ownership rule). Apis whose bodies hold no []byte are released without it. Call it after
// Register and before NewServer; it panics for a key not registered or a registry
// already given to NewServer.
func (r *Registry) ReleaseFrameAfterHandler(key int16) {
	if r.frozen.Load() {
		panic(fmt.Sprintf("rpc: ReleaseFrameAfterHandler(%d) after NewServer", key))
	}
	a, ok := r.apis[key]
	if !ok {
		panic(fmt.Sprintf("rpc: ReleaseFrameAfterHandler: key %d is not registered", key))
	}
	a.releaseFrame = true
	r.apis[key] = a
}

// OfferInternal advertises the internal API key in the ApiVersions answers of
// connections whose ApiVersions v3+ request names software as its client software, and
// in no other: a tool of the project's own (the operator CLI) can then send it through
// an ordinary client, while every other client is never offered it. Being offered an
// API grants nothing; its authorization rule decides. Call it after RegisterInternal
// and before NewServer; it panics for a key not registered as internal, an empty name
// or a registry already given to NewServer.
func (r *Registry) OfferInternal(key int16, software string) {
	if r.frozen.Load() {
		panic(fmt.Sprintf("rpc: OfferInternal(%d) after NewServer", key))
	}
	a, ok := r.apis[key]
	if !ok || !a.internal || software == "" {
		panic(fmt.Sprintf("rpc: OfferInternal: key %d is not a registered internal API, or no software name", key))
	}
	a.offeredTo = software
	r.apis[key] = a
}

// releasesFrame reports whether key's request frames are released after the handler.
func (r *Registry) releasesFrame(key int16) bool {
	return r.apis[key].releaseFrame
}

// SetFeatures has f fill the supported and finalized features of every ApiVersions
// v3+ response; f is called from any connection's goroutine. Call it before NewServer.
func (r *Registry) SetFeatures(f func(version int16, resp *kmsg.ApiVersionsResponse)) {
	if r.frozen.Load() {
		panic("rpc: SetFeatures after NewServer")
	}
	r.features = f
}

// ApiVersionsResponse returns the response to an ApiVersions request of version
// version: error 0, throttle 0, and one entry per registered key plus key 18, sorted by
// key; from v3 the features SetFeatures fills (none without it).
func (r *Registry) ApiVersionsResponse(version int16) *kmsg.ApiVersionsResponse {
	return r.apiVersionsResponseFor(version, "")
}

// apiVersionsResponseFor is ApiVersionsResponse for a client naming software as its
// client software: it lists too the internal APIs offered to it (OfferInternal).
func (r *Registry) apiVersionsResponseFor(version int16, software string) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = version
	keys := make([]int16, 0, len(r.apis)+1)
	keys = append(keys, apiVersionsKey)
	for k, api := range r.apis {
		if !api.internal || (software != "" && api.offeredTo == software) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		minV, maxV, _ := r.versions(k)
		entry := kmsg.NewApiVersionsResponseApiKey()
		entry.ApiKey, entry.MinVersion, entry.MaxVersion = k, minV, maxV
		resp.ApiKeys = append(resp.ApiKeys, entry)
	}
	if r.features != nil && version >= 3 {
		r.features(version, resp)
	}
	return resp
}

// downgradeResponse is the answer to an ApiVersions request above version 4 (KIP-511):
// the v0 body layout with UNSUPPORTED_VERSION and only the key-18 range, so the client
// retries at our maximum. The caller writes it as version 0 without decoding the request.
func downgradeResponse() *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	entry := kmsg.NewApiVersionsResponseApiKey()
	entry.ApiKey, entry.MinVersion, entry.MaxVersion = apiVersionsKey, apiVersionsMinVersion, apiVersionsMaxVersion
	resp.ApiKeys = append(resp.ApiKeys, entry)
	return resp
}

// versions returns the served range of key, including the built-in ApiVersions.
func (r *Registry) versions(key int16) (minVersion, maxVersion int16, ok bool) {
	if key == apiVersionsKey {
		return apiVersionsMinVersion, apiVersionsMaxVersion, true
	}
	a, ok := r.apis[key]
	return a.minVersion, a.maxVersion, ok
}

// handler returns the handler of a registered key (nil for key 18 and unknown keys).
func (r *Registry) handler(key int16) Handler {
	return r.apis[key].handler
}
