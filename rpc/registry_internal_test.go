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
