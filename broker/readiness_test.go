package broker

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// gateBroker is just enough of a Broker for the readiness wait.
func gateBroker() *Broker {
	return &Broker{readyCh: make(chan struct{}), draining: make(chan struct{}), stop: make(chan struct{}), logger: hclog.NewNullLogger()}
}

// gateCall runs req through untilReady on its own goroutine; the channel receives once
// the wrapper returns, and called is closed if the handler ran.
func gateCall(b *Broker, ctx context.Context, key kmsg.Key, req *rpc.Request) (returned chan struct{}, called chan struct{}) {
	returned, called = make(chan struct{}), make(chan struct{})
	h := b.untilReady(key, func(context.Context, *rpc.Request) rpc.Result {
		close(called)
		return rpc.NoResponse()
	})
	go func() {
		h(ctx, req)
		close(returned)
	}()
	return returned, called
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestUntilReadyHoldsClientRequestsUntilReady(t *testing.T) {
	b := gateBroker()
	req := &rpc.Request{Key: int16(kmsg.Metadata), Body: kmsg.NewPtrMetadataRequest(), ClientID: kmsg.StringPtr("app")}
	returned, called := gateCall(b, context.Background(), kmsg.Metadata, req)
	// The handler must not run before readiness: give the goroutine a chance to (wrongly)
	// call it, then check. The wait is for a negative, not synchronisation.
	select {
	case <-called:
		t.Fatal("Metadata was handled before the broker was ready")
	case <-time.After(100 * time.Millisecond):
	}
	b.markReady(b.startedAt, b.startedAt, 7, 0, 0)
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("the request was not handled once the broker became ready")
	}
	if !isClosed(called) {
		t.Fatal("the wrapper returned without running the handler")
	}
	// Once ready, requests run at once.
	returned, called = gateCall(b, context.Background(), kmsg.Metadata, req)
	<-returned
	if !isClosed(called) {
		t.Fatal("a request after readiness did not reach its handler")
	}
}

func TestUntilReadyPassesBrokerRequests(t *testing.T) {
	b := gateBroker()
	req := &rpc.Request{Key: int16(kmsg.Fetch), Body: kmsg.NewPtrFetchRequest(), ClientID: kmsg.StringPtr(forwardedClientPrefix + "2")}
	returned, called := gateCall(b, context.Background(), kmsg.Fetch, req)
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("a follower fetch waited for readiness")
	}
	if !isClosed(called) {
		t.Fatal("a follower fetch did not reach its handler")
	}
}

func TestUntilReadyBoundedByTheRequestsTimeout(t *testing.T) {
	b := gateBroker()
	// A partition API is answered after its own timeout (every partition
	// NOT_LEADER_OR_FOLLOWER, from noReplicaError).
	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis = 50
	returned, called := gateCall(b, context.Background(), kmsg.Fetch, &rpc.Request{Body: fetch, ClientID: kmsg.StringPtr("app")})
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("a fetch waited past its max_wait_ms")
	}
	if !isClosed(called) {
		t.Fatal("a fetch past its max_wait_ms was not answered by its handler")
	}
	// Any other API is never answered from an image that is not caught up: its
	// connection closes.
	create := kmsg.NewPtrCreateTopicsRequest()
	create.TimeoutMillis = 50
	returned, called = gateCall(b, context.Background(), kmsg.CreateTopics, &rpc.Request{Body: create, ClientID: kmsg.StringPtr("app")})
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("CreateTopics waited past its timeout_ms")
	}
	if isClosed(called) {
		t.Fatal("CreateTopics was handled before the broker was ready")
	}
	// A closed connection or a stopping broker ends the wait too.
	ctx, cancel := context.WithCancel(context.Background())
	returned, called = gateCall(b, ctx, kmsg.Metadata, &rpc.Request{Body: kmsg.NewPtrMetadataRequest()})
	cancel()
	<-returned
	returned2, called2 := gateCall(b, context.Background(), kmsg.Metadata, &rpc.Request{Body: kmsg.NewPtrMetadataRequest()})
	close(b.draining)
	<-returned2
	if isClosed(called) || isClosed(called2) {
		t.Fatal("a request was handled before the broker was ready")
	}
}

func TestReadinessBound(t *testing.T) {
	produce := kmsg.NewPtrProduceRequest()
	produce.TimeoutMillis = 1500
	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis = 500
	for _, tc := range []struct {
		req  kmsg.Request
		want time.Duration
	}{
		{produce, 1500 * time.Millisecond},
		{fetch, 500 * time.Millisecond},
		{kmsg.NewPtrMetadataRequest(), clientRequestTimeout},
		{kmsg.NewPtrListOffsetsRequest(), clientRequestTimeout},
	} {
		if got := readinessBound(tc.req); got != tc.want {
			t.Errorf("%s: bound %s, want %s", kmsg.NameForKey(tc.req.Key()), got, tc.want)
		}
	}
}
