package rpc

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Internal APIs are served but never advertised.
func TestRegisterInternalIsServedNotAdvertised(t *testing.T) {
	reg := NewRegistry()
	reg.Register(3, 0, 12, echoMetadata)
	reg.RegisterInternal(63, 0, 1, func(_ context.Context, req *Request) Result {
		resp := req.Body.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
		resp.IsCaughtUp = true
		return Respond(resp)
	})
	for _, k := range reg.ApiVersionsResponse(3).ApiKeys {
		if k.ApiKey == 63 {
			t.Fatal("internal API advertised")
		}
	}
	srv := startServer(t, ServerConfig{}, reg)
	cl, err := Dial(context.Background(), srv.addr, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.Version = 1
	resp, err := cl.Do(context.Background(), req)
	if err != nil || !resp.(*kmsg.BrokerHeartbeatResponse).IsCaughtUp {
		t.Fatalf("internal API call: %v %+v", err, resp)
	}
}

// An internal API offered to one client software is listed in that software's
// ApiVersions answers (v3+, where the request names it) and in no other.
func TestOfferInternalAdvertisesToThatSoftwareAlone(t *testing.T) {
	reg := NewRegistry()
	reg.RegisterInternal(63, 0, 1, func(context.Context, *Request) Result { return Result{} })
	reg.OfferInternal(63, "ops-tool")
	listed := func(resp *kmsg.ApiVersionsResponse) bool {
		for _, k := range resp.ApiKeys {
			if k.ApiKey == 63 {
				return true
			}
		}
		return false
	}
	if listed(reg.ApiVersionsResponse(3)) || listed(reg.apiVersionsResponseFor(3, "other")) {
		t.Fatal("offered API listed for another client")
	}
	if !listed(reg.apiVersionsResponseFor(3, "ops-tool")) {
		t.Fatal("offered API not listed for its software")
	}
}
